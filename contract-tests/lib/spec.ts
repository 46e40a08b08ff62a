/**
 * The bundled OpenAPI documents as the checks see them: the list of operations with their
 * documented responses, and a validator that says whether a response (status, headers, body)
 * is one the document allows.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';

const require = createRequire(import.meta.url);
// ajv ships CommonJS; the 2020-12 build matches OpenAPI 3.1 schemas.
const Ajv2020 = require('ajv/dist/2020').default as typeof import('ajv').default;
const addFormats = require('ajv-formats').default as (ajv: unknown) => void;

/** 'backup' and 'tools' for the project's documents; any name for another document (contract-check). */
export type ApiName = string;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface Operation {
  api: ApiName;
  operationId: string;
  method: string;
  /** Path template as written in the document, e.g. /backup/{id}. */
  path: string;
  /** Documented status codes (as written: "200", "4XX", "default"). */
  statuses: string[];
  /** The operation object with parameters and requestBody resolved one level. */
  op: Json;
  pathItem: Json;
}

export interface ApiDoc {
  api: ApiName;
  file: string;
  file30: string;
  doc: Json;
  /** Path prefix of the first server URL: /api/v1 for the Backup API, '' for the tools. */
  basePath: string;
  operations: Operation[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

/** Generated documents live in generated/ (or CONTRACT_SPEC_DIR while the harness is developed). */
export function specDir(root: string): string {
  return process.env.CONTRACT_SPEC_DIR ?? join(root, 'generated');
}

function findFile(dir: string, api: ApiName, want30: boolean): string {
  const files = readdirSync(dir).filter(
    (f) => f.startsWith(api) && f.endsWith('.json') && f.includes('openapi') && f.includes('3.0') === want30,
  );
  const file = files.sort()[0];
  if (file === undefined) throw new Error(`no ${want30 ? '3.0 ' : ''}bundled ${api} document (*.openapi.json) in ${dir}`);
  return join(dir, file);
}

export function pointer(doc: Json, ref: string): Json {
  if (!ref.startsWith('#/')) throw new Error(`only local refs are expected in a bundled document: ${ref}`);
  let node = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    node = node?.[key];
  }
  if (node === undefined) throw new Error(`dangling $ref ${ref}`);
  return node;
}

/** Follows $ref chains of non-schema objects (responses, parameters, headers, request bodies). */
export function deref(doc: Json, node: Json): Json {
  let current = node;
  for (let i = 0; i < 20 && current && typeof current.$ref === 'string'; i++) current = pointer(doc, current.$ref);
  return current;
}

function basePathOf(doc: Json): string {
  const server = doc.servers?.[0];
  if (!server?.url) return '';
  let url: string = server.url;
  for (const [name, v] of Object.entries<Json>(server.variables ?? {})) url = url.replaceAll(`{${name}}`, v.default ?? '');
  const path = new URL(url, 'http://placeholder').pathname.replace(/\/$/, '');
  return path;
}

export function loadApi(root: string, api: ApiName): ApiDoc {
  const dir = specDir(root);
  const file = findFile(dir, api, false);
  return apiFromDocument(api, JSON.parse(readFileSync(file, 'utf8')), file, findFile(dir, api, true));
}

/** The checks' view of a bundled document: its operations, responses and base path. */
export function apiFromDocument(api: ApiName, doc: Json, file: string, file30 = ''): ApiDoc {
  const operations: Operation[] = [];
  for (const [path, rawItem] of Object.entries<Json>(doc.paths ?? {})) {
    const pathItem = deref(doc, rawItem);
    for (const method of METHODS) {
      const op = pathItem[method];
      if (!op) continue;
      operations.push({
        api,
        operationId: op.operationId ?? `${method} ${path}`,
        method: method.toUpperCase(),
        path,
        statuses: Object.keys(op.responses ?? {}),
        op,
        pathItem,
      });
    }
  }
  return { api, file, file30, doc, basePath: basePathOf(doc), operations };
}

/** Finds the documented response key a status falls under: exact, then 4XX, then default. */
export function responseKey(op: Operation, status: number): string | undefined {
  const s = String(status);
  if (op.statuses.includes(s)) return s;
  const range = `${s[0]}XX`;
  const found = op.statuses.find((k) => k.toUpperCase() === range);
  if (found) return found;
  return op.statuses.includes('default') ? 'default' : undefined;
}

/** Matches a concrete request path (without the base path) to an operation. */
export function matchOperation(apis: ApiDoc[], method: string, fullPath: string): Operation | undefined {
  const pathOnly = fullPath.split('?')[0] ?? '';
  // Literal segments win over templated ones (e.g. /backup/x/cancel vs /backup/{id}).
  const candidates: Array<{ op: Operation; literal: number }> = [];
  for (const api of apis) {
    if (api.basePath && !pathOnly.startsWith(api.basePath + '/')) continue;
    const rel = pathOnly.slice(api.basePath.length);
    for (const op of api.operations) {
      if (op.method !== method.toUpperCase()) continue;
      const tpl = op.path.split('/');
      const got = rel.split('/');
      if (tpl.length !== got.length) continue;
      let literal = 0;
      let ok = true;
      for (let i = 0; i < tpl.length; i++) {
        const t = tpl[i] ?? '';
        if (/^\{.+\}$/.test(t)) continue;
        if (t !== got[i]) {
          ok = false;
          break;
        }
        literal++;
      }
      if (ok) candidates.push({ op, literal });
    }
  }
  candidates.sort((a, b) => b.literal - a.literal);
  return candidates[0]?.op;
}

export interface Verdict {
  ok: boolean;
  problems: string[];
  /** The documented response key the status matched, if any. */
  key?: string;
}

/** Validates responses against the documents with ajv (JSON Schema 2020-12, as OpenAPI 3.1). */
export class ResponseValidator {
  private readonly ajv: InstanceType<typeof Ajv2020>;
  private readonly cache = new Map<string, ValidateFunction>();
  private readonly apis: ApiDoc[];

  constructor(apis: ApiDoc[]) {
    this.apis = apis;
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    addFormats(this.ajv);
    this.ajv.addKeyword({ keyword: 'example' });
    for (const hint of ['int32', 'int64', 'float', 'double']) this.ajv.addFormat(hint, true);
    for (const api of apis) this.ajv.addSchema(api.doc, `doc-${api.api}`);
  }

  private compile(api: ApiName, schema: Json, cacheKey: string): ValidateFunction {
    let fn = this.cache.get(cacheKey);
    if (!fn) {
      // Rewrite local refs so they resolve inside the registered document.
      const rewritten = JSON.parse(
        JSON.stringify(schema).replace(/"\$ref":"#\//g, `"$ref":"doc-${api}#/`),
      );
      fn = this.ajv.compile(rewritten);
      this.cache.set(cacheKey, fn);
    }
    return fn;
  }

  /** Validates any JSON value against a schema taken from the given API's document. */
  validateValue(api: ApiName, schema: Json, value: unknown, cacheKey: string): string[] {
    const fn = this.compile(api, schema, cacheKey);
    if (fn(value)) return [];
    return (fn.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`.trim());
  }

  check(op: Operation, status: number, headers: Record<string, string>, body: unknown, rawText: string): Verdict {
    const apiDoc = this.apis.find((a) => a.api === op.api);
    if (!apiDoc) return { ok: false, problems: [`unknown api ${op.api}`] };
    const key = responseKey(op, status);
    if (!key) return { ok: false, problems: [`status ${status} is not documented for ${op.operationId} (${op.statuses.join(',')})`] };
    const response = deref(apiDoc.doc, op.op.responses[key]);
    const problems: string[] = [];
    const content = response.content as Json | undefined;
    if (content && Object.keys(content).length > 0) {
      const ctype = (headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
      const media = content[ctype] ?? (ctype.endsWith('+json') ? content['application/json'] : undefined);
      if (!media) {
        problems.push(`content-type "${ctype}" is not documented (${Object.keys(content).join(', ')})`);
      } else if (media.schema) {
        if (body === undefined) problems.push(`body is not JSON: ${rawText.slice(0, 120)}`);
        else problems.push(...this.validateValue(op.api, media.schema, body, `${op.api} ${op.method} ${op.path} ${key} ${ctype}`).map((p) => `body ${p}`));
      }
    } else if (rawText.length > 0 && status !== 204) {
      problems.push(`undocumented body on ${status}`);
    }
    for (const [name, rawHeader] of Object.entries<Json>(response.headers ?? {})) {
      const header = deref(apiDoc.doc, rawHeader);
      const value = headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) problems.push(`required header ${name} missing`);
        continue;
      }
      if (header.schema) {
        const type = deref(apiDoc.doc, header.schema).type;
        const coerced = type === 'integer' || type === 'number' ? (/^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value) : value;
        problems.push(
          ...this.validateValue(op.api, header.schema, coerced, `${op.api} header ${name} ${JSON.stringify(header.schema)}`).map(
            (p) => `header ${name}=${value}: ${p}`,
          ),
        );
      }
    }
    return { ok: problems.length === 0, problems, key };
  }
}

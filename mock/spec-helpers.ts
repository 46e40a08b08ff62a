/**
 * Reading the bundled documents in tests: every operation with a request that passes validation,
 * every named example of every response, and a JSON Schema validator for response bodies.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { resolveRef, type MockableDocument } from './document.ts';

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
  schema?: { examples?: unknown[]; enum?: unknown[]; $ref?: string };
}

interface Operation {
  operationId: string;
  security?: unknown[];
  parameters?: unknown[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
}

interface Media {
  schema?: unknown;
  example?: unknown;
  examples?: Record<string, unknown>;
}

export interface SampleRequest {
  operationId: string;
  method: string;
  /** Path below the server URL, parameters filled in. */
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface NamedExample {
  operationId: string;
  status: number;
  name: string;
  value: unknown;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export function operations(doc: MockableDocument): { method: string; path: string; op: Operation }[] {
  const out: { method: string; path: string; op: Operation }[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = (item as Record<string, Operation | undefined>)[method];
      if (op) out.push({ method: method.toUpperCase(), path, op });
    }
  }
  return out;
}

function parameterValue(doc: MockableDocument, parameter: Parameter): string {
  const schema = resolveRef<NonNullable<Parameter['schema']>>(doc, parameter.schema) ?? {};
  const firstExample = parameter.examples ? Object.values(parameter.examples)[0] : undefined;
  const value =
    parameter.example ??
    resolveRef<{ value?: unknown }>(doc, firstExample)?.value ??
    schema.examples?.[0] ??
    schema.enum?.[0];
  if (value === undefined) throw new Error(`no sample value for parameter ${parameter.name}`);
  return String(value);
}

/** A request that passes the document's validation: parameters, body and credentials from its examples. */
export function sampleRequest(doc: MockableDocument, method: string, path: string, op: Operation): SampleRequest {
  const headers: Record<string, string> = {};
  let filled = path;
  for (const ref of op.parameters ?? []) {
    const parameter = resolveRef<Parameter>(doc, ref);
    if (parameter?.in === 'path') filled = filled.replace(`{${parameter.name}}`, encodeURIComponent(parameterValue(doc, parameter)));
  }
  const security = op.security ?? (doc.security as unknown[] | undefined) ?? [];
  if (security.length > 0) headers.authorization = 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl';
  let body: string | undefined;
  const requestBody = resolveRef<{ content?: Record<string, Media> }>(doc, op.requestBody);
  const media = requestBody?.content?.['application/json'];
  if (media) {
    const first = media.examples ? Object.values(media.examples)[0] : undefined;
    const value = resolveRef<{ value?: unknown }>(doc, first)?.value ?? media.example;
    headers['content-type'] = 'application/json';
    body = JSON.stringify(value);
  }
  return { operationId: op.operationId, method, path: filled, headers, body };
}

export function namedExamples(doc: MockableDocument, op: Operation): NamedExample[] {
  const out: NamedExample[] = [];
  for (const [code, ref] of Object.entries(op.responses)) {
    const response = resolveRef<{ content?: Record<string, Media> }>(doc, ref);
    for (const [name, example] of Object.entries(response?.content?.['application/json']?.examples ?? {})) {
      out.push({
        operationId: op.operationId,
        status: Number(code),
        name,
        value: resolveRef<{ value?: unknown }>(doc, example)?.value,
      });
    }
  }
  return out;
}

/**
 * Validates a response body against the operation's schema for that status (JSON Schema 2020-12).
 * `withoutLookahead` leaves out the patterns with lookahead, which json-schema-faker cannot honour
 * (so dynamic data is checked against everything else, also inside `anyOf` branches).
 */
export function responseValidator(
  doc: MockableDocument,
  options: { withoutLookahead?: boolean } = {},
): (op: Operation, status: number, body: unknown) => string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const components = (doc as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {};
  const lookahead = /\(\?[!=]/;
  const rewrite = (schema: unknown): unknown =>
    JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"#/$defs/'), (key, value) =>
      options.withoutLookahead && key === 'pattern' && typeof value === 'string' && lookahead.test(value) ? undefined : value,
    );
  const defs = rewrite(components) as Record<string, unknown>;
  return (op, status, body) => {
    const response = resolveRef<{ content?: Record<string, Media> }>(doc, op.responses[String(status)]);
    const schema = response?.content?.['application/json']?.schema;
    if (!schema) return [`no schema for ${op.operationId} ${status}`];
    const validate = ajv.compile({ ...(rewrite(schema) as object), $defs: defs });
    return validate(body) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
  };
}


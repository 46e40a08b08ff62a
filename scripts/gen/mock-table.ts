// The operation table the mock's behaviour runs on (generated/mock-operations.ts): for every
// operation its route, whether it needs a bearer token, the defaults of its request body and
// query, and the named examples and declared headers of each response. The mock server and the
// SDK's MSW handlers share it, so an operation added to the spec is mocked by both from its
// examples without a line of mock code.
import type { OpenApiDocument } from './apis.ts';
import { readRateLimits, type RateLimitFact } from './facts.ts';
import { basePath } from './handler-table.ts';

type Node = Record<string, unknown>;
const isObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export interface MockResponseShape {
  headers: string[];
  examples: Record<string, unknown>;
}

export interface MockOperationRow {
  method: string;
  path: string;
  secured: boolean;
  rateLimit: RateLimitFact | null;
  requestBody: { required: boolean; defaults: unknown; properties: string[] | null; requiredProperties: string[] } | null;
  query: string[];
  queryDefaults: Record<string, unknown>;
  responses: Record<string, MockResponseShape>;
}

function deref(doc: OpenApiDocument, node: unknown): unknown {
  for (let i = 0; i < 20 && isObject(node) && typeof node.$ref === 'string' && node.$ref.startsWith('#/'); i++) {
    const ref: string = node.$ref;
    node = ref
      .slice(2)
      .split('/')
      .reduce<unknown>((cur, part) => (isObject(cur) ? cur[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), doc);
  }
  return node;
}

/** The defaults a schema declares, as the value they add up to (objects: per property, recursively). */
function schemaDefaults(doc: OpenApiDocument, raw: unknown, depth = 0): unknown {
  if (depth > 10 || !isObject(raw)) return undefined;
  if ('default' in raw) return raw.default;
  const schema = deref(doc, raw);
  if (!isObject(schema)) return undefined;
  if ('default' in schema) return schema.default;
  if (!isObject(schema.properties)) return undefined;
  const out: Node = {};
  for (const [name, property] of Object.entries(schema.properties)) {
    const value = schemaDefaults(doc, property, depth + 1);
    if (value !== undefined) out[name] = value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** What the MSW handlers check of a body without a schema validator: required and known top-level properties. */
function requestBodyShape(doc: OpenApiDocument, body: Node, raw: unknown): NonNullable<MockOperationRow['requestBody']> {
  const schema = deref(doc, raw);
  const properties = isObject(schema) && isObject(schema.properties) && schema.additionalProperties === false ? Object.keys(schema.properties) : null;
  const requiredProperties = isObject(schema) && Array.isArray(schema.required) ? schema.required.map(String) : [];
  return { required: body.required === true, defaults: schemaDefaults(doc, raw) ?? null, properties, requiredProperties };
}

export function mockOperationTable(doc: OpenApiDocument): { basePath: string; operations: Record<string, MockOperationRow> } {
  const globalSecurity = (doc.security as unknown[] | undefined) ?? [];
  const limits = readRateLimits(doc);
  const operations: Record<string, MockOperationRow> = {};
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      const body = deref(doc, op.requestBody);
      const media = isObject(body) && isObject(body.content) ? body.content['application/json'] : undefined;
      const query: string[] = [];
      const queryDefaults: Record<string, unknown> = {};
      for (const ref of [...((item.parameters as unknown[]) ?? []), ...((op.parameters as unknown[]) ?? [])]) {
        const parameter = deref(doc, ref);
        if (!isObject(parameter) || parameter.in !== 'query') continue;
        query.push(String(parameter.name));
        const value = schemaDefaults(doc, parameter.schema);
        if (value !== undefined) queryDefaults[String(parameter.name)] = value;
      }
      const responses: Record<string, MockResponseShape> = {};
      for (const [status, ref] of Object.entries((op.responses as Node | undefined) ?? {})) {
        const response = deref(doc, ref);
        if (!isObject(response)) continue;
        const content = isObject(response.content) ? response.content['application/json'] : undefined;
        const examples: Record<string, unknown> = {};
        for (const [name, example] of Object.entries(isObject(content) && isObject(content.examples) ? content.examples : {})) {
          const resolved = deref(doc, example);
          if (isObject(resolved) && 'value' in resolved) examples[name] = resolved.value;
        }
        responses[status] = { headers: Object.keys(isObject(response.headers) ? response.headers : {}), examples };
      }
      operations[String(op.operationId)] = {
        method,
        path,
        secured: ((op.security as unknown[] | undefined) ?? globalSecurity).length > 0,
        rateLimit: limits.find((l) => l.method === method && l.path === path)?.limit ?? null,
        requestBody: isObject(media) ? requestBodyShape(doc, body as Node, media.schema) : null,
        query,
        queryDefaults,
        responses,
      };
    }
  }
  return { basePath: basePath(doc), operations };
}

export function mockOperationsModule(apis: { name: string; doc: OpenApiDocument }[], header: string): string {
  const table = Object.fromEntries(apis.map(({ name, doc }) => [name, mockOperationTable(doc)]));
  return `${header}
import type { RateLimit } from './rate-limits.ts';

export interface MockResponseShape {
  /** The response headers the spec declares. */
  readonly headers: readonly string[];
  /** Named examples of the JSON body. */
  readonly examples: Readonly<Record<string, unknown>>;
}

export interface MockOperation {
  readonly method: string;
  /** Path template relative to the API's base path. */
  readonly path: string;
  /** Whether a bearer token is required. */
  readonly secured: boolean;
  /** Its x-rate-limit (null: not limited). */
  readonly rateLimit: RateLimit | null;
  /**
   * The JSON request body: whether it is required, the value its schema's defaults add up to,
   * its top-level properties (null when others are allowed) and those it requires.
   */
  readonly requestBody: {
    readonly required: boolean;
    readonly defaults: unknown;
    readonly properties: readonly string[] | null;
    readonly requiredProperties: readonly string[];
  } | null;
  /** Names of the query parameters. */
  readonly query: readonly string[];
  readonly queryDefaults: Readonly<Record<string, unknown>>;
  /** By status code as written in the spec. */
  readonly responses: Readonly<Record<string, MockResponseShape>>;
}

export interface MockApi {
  /** The path of the API's first server URL ('' for the site origin). */
  readonly basePath: string;
  readonly operations: Readonly<Record<string, MockOperation>>;
}

export type MockApis = Readonly<Record<${apis.map((a) => `'${a.name}'`).join(' | ')}, MockApi>>;

/** Every operation of both APIs, with its examples, for the mock server and the MSW handlers. */
export const mockApis: MockApis = ${JSON.stringify(table, null, 2)};
`;
}

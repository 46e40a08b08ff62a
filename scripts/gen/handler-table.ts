// Writes the typed handler table of one API: the operations interface (request and response
// types derived from openapi-typescript's `operations`), the route table and the handler map
// type. The type-level helpers live once in generated/handler-types.ts (HANDLER_TYPES below).
import type { Api, OpenApiDocument } from './apis.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export interface OperationRow {
  operationId: string;
  /** `<status> <header>` of every declared response header that is not `required: true`. */
  optionalHeaders: string[];
  method: (typeof METHODS)[number];
  path: string;
  expressPath: string;
  security: string[];
  summary: string;
}

interface OperationObject {
  operationId?: string;
  summary?: string;
  security?: Record<string, unknown>[];
  responses?: Record<string, unknown>;
}

type Node = Record<string, unknown>;
const isObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Follows a local `#/...` $ref of the bundle. */
function deref(doc: OpenApiDocument, node: unknown): unknown {
  if (!isObject(node) || typeof node.$ref !== 'string' || !node.$ref.startsWith('#/')) return node;
  const target = node.$ref
    .slice(2)
    .split('/')
    .reduce<unknown>((cur, part) => (isObject(cur) ? cur[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), doc);
  return deref(doc, target);
}

// openapi-typescript marks a $ref'd response header required whatever its `required` says, so
// the handler table takes optionality from the document itself.
function optionalHeaders(doc: OpenApiDocument, op: OperationObject): string[] {
  const out: string[] = [];
  for (const [status, ref] of Object.entries(op.responses ?? {})) {
    const response = deref(doc, ref);
    if (!isObject(response) || !isObject(response.headers)) continue;
    for (const [name, header] of Object.entries(response.headers)) {
      const resolved = deref(doc, header);
      if (isObject(resolved) && resolved.required !== true) out.push(`${status} ${name}`);
    }
  }
  return out;
}

/** Every operation of a bundled document, in document order. */
export function operationRows(doc: OpenApiDocument): OperationRow[] {
  const globalSecurity = (doc.security as Record<string, unknown>[] | undefined) ?? [];
  const rows: OperationRow[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as OperationObject | undefined;
      if (!op) continue;
      if (!op.operationId) throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
      const security = [...new Set((op.security ?? globalSecurity).flatMap((req) => Object.keys(req)))];
      rows.push({ operationId: op.operationId, optionalHeaders: optionalHeaders(doc, op), method, path, expressPath: expressPath(path), security, summary: op.summary ?? '' });
    }
  }
  return rows;
}

/** `/backup/{id}` → `/backup/:id` (Express 5 / path-to-regexp 8 syntax). */
export function expressPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? `:${name}` : `:${JSON.stringify(name)}`));
}

/** The path part of the first server URL (`{origin}/api/v1` → `/api/v1`), '' for the origin itself. */
export function basePath(doc: OpenApiDocument): string {
  const servers = doc.servers as { url: string }[] | undefined;
  const url = servers?.[0]?.url ?? '';
  // Drop `scheme://host` (variables allowed, e.g. `{scheme}://{host}`) or a leading `{origin}`.
  return url.replace(/^[^/]*\/\/[^/]*/, '').replace(/^\{[^}]*\}/, '').replace(/\/+$/, '');
}

const q = (text: string): string => `'${text.replace(/[\\']/g, '\\$&')}'`;
const key = (name: string): string => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : q(name));
const comment = (text: string): string => text.replace(/\*\//g, '*\\/').replace(/\s+/g, ' ').trim();

export function handlerTable(api: Api, doc: OpenApiDocument, header: string): string {
  const T = api.typeName;
  const v = api.name;
  const rows = operationRows(doc);
  const lines = [
    header,
    `import type { operations } from './${api.name}-types.ts';`,
    `import type { OperationInfo, RequestOf, ResponseOf } from './handler-types.ts';`,
    '',
    `/** Every operation of the ${doc.info.title}: its request and its response, a union over the statuses the spec declares. */`,
    `export interface ${T}Operations {`,
    ...rows.flatMap((r) => [
      `  /** ${r.method.toUpperCase()} ${r.path}${r.summary ? ` — ${comment(r.summary)}` : ''} */`,
      `  ${key(r.operationId)}: { request: RequestOf<operations[${q(r.operationId)}]>; response: ResponseOf<operations[${q(r.operationId)}]${r.optionalHeaders.length ? `, ${r.optionalHeaders.map(q).join(' | ')}` : ''}> };`,
    ]),
    '}',
    '',
    `export type ${T}OperationId = keyof ${T}Operations;`,
    '',
    `/** Where the routes of the ${doc.info.title} are mounted (the path of its server URL). */`,
    `export const ${v}BasePath = ${q(basePath(doc))};`,
    '',
    `/** Method, paths (relative to ${v}BasePath) and security schemes of every operation, for registering routes. */`,
    `export const ${v}Operations = {`,
    ...rows.map(
      (r) =>
        `  ${key(r.operationId)}: { method: '${r.method}', path: ${q(r.path)}, expressPath: ${q(r.expressPath)}, security: [${r.security.map(q).join(', ')}] },`,
    ),
    `} as const satisfies Record<${T}OperationId, OperationInfo>;`,
    '',
    `/** One handler per operation: a server object missing one, or returning a status, body or header the spec does not declare, fails tsc. */`,
    `export type ${T}Handlers<Ctx> = {`,
    `  [K in ${T}OperationId]: (req: ${T}Operations[K]['request'], ctx: Ctx) => Promise<${T}Operations[K]['response']>;`,
    '};',
    '',
  ];
  return lines.join('\n');
}

/** generated/handler-types.ts: the helpers that turn one openapi-typescript operation into request/response types. */
export function handlerTypes(header: string): string {
  return `${header}
/** Headers the HTTP layer sets on every response (request id, rate limiter): optional for handlers. */
export type HttpLayerHeader =
  | 'X-Request-Id'
  | 'X-RateLimit-Limit'
  | 'X-RateLimit-Remaining'
  | 'X-RateLimit-Reset'
  | 'Retry-After'
  | 'RateLimit'
  | 'RateLimit-Policy';

export interface OperationInfo {
  readonly method: 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace';
  /** The OpenAPI path, e.g. /backup/{id}. */
  readonly path: string;
  /** The same path in Express syntax, e.g. /backup/:id. */
  readonly expressPath: string;
  /** Security schemes that may authorize the call; empty when it needs none. */
  readonly security: readonly string[];
}

type Simplify<T> = { [K in keyof T]: T[K] } & {};
/** Drops openapi-typescript's \`[name: string]: unknown\` index signature, keeping the declared keys. */
type Declared<T> = { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };
/** A parameter group (path, query, header); an empty object when the operation declares none. */
type Group<T> = [NonNullable<T>] extends [never] ? Record<string, never> : NonNullable<T>;
/** Request header names as Node delivers them (lower case). */
type Lowercased<T> = { [K in keyof T as K extends string ? Lowercase<K> : K]: T[K] };
type Json<T> = T extends { content: { 'application/json': infer B } } ? B : undefined;

type Operation = {
  parameters: { query?: unknown; header?: unknown; path?: unknown };
  responses: object;
};

type BodyOf<Op> = Op extends { requestBody: infer B }
  ? Json<B>
  : Op extends { requestBody?: infer B }
    ? Json<NonNullable<B>> | undefined
    : undefined;

/** What a handler receives: validated path params, query, declared headers and the JSON body. */
export type RequestOf<Op extends Operation> = {
  params: Group<Op['parameters']['path']>;
  query: Group<Op['parameters']['query']>;
  headers: Simplify<Lowercased<Group<Op['parameters']['header']>>>;
  body: BodyOf<Op>;
};

/** Declared response headers; those in \`Optional\` may be left out. */
type HeadersOf<R, Optional extends PropertyKey> = R extends { headers: infer H }
  ? Simplify<Omit<Declared<H>, Optional> & Partial<Pick<Declared<H>, Extract<keyof Declared<H>, Optional>>>>
  : Record<string, never>;
/** Header names of \`<status> <name>\` entries for status S. */
type OptionalAt<U extends string, S> = U extends \`\${S & (string | number)} \${infer N}\` ? N : never;

type Status<S> = S extends number ? S : S extends \`\${infer N extends number}\` ? N : number;

/**
 * What a handler returns: one member per declared status, with that status's body and headers.
 * \`Optional\` lists \`<status> <header>\` for the headers the spec does not mark required.
 */
export type ResponseOf<Op extends Operation, Optional extends string = never> = {
  [S in keyof Op['responses']]: {
    status: Status<S>;
    body: Json<Op['responses'][S]>;
    headers: HeadersOf<Op['responses'][S], HttpLayerHeader | OptionalAt<Optional, S>>;
  };
}[keyof Op['responses']];
`;
}

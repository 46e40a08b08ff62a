/**
 * Request arbitraries per operation: a request built from the operation's schemas (body, path,
 * query, headers), and the same request with one mutation: wrong types, missing required or
 * extra properties, huge strings, bodies that are not objects or not JSON, other media types,
 * odd headers, bad path parameters and query values.
 *
 * check-site URLs are drawn from loopback and refused-before-dialling addresses only (see
 * localUrlArb), so nothing the server dials leaves the host.
 *
 * Against the project's own server the environment names fixtures (a source tree, completed
 * backups, credentials) so requests get past validation into the handlers; against any other
 * deployment (contract-check) only the schemas and the token are used.
 */
import fc from 'fast-check';
import { deref, type ApiDoc, type Json, type Operation } from '../lib/spec.ts';
import { nastyStringArb, valueArb, wrongTypeArb, type Overrides } from './arbitrary.ts';

export interface FuzzEnv {
  /** Bearer token for the operations the spec secures (none: they are sent without). */
  token?: string;
  /** A source tree inside the allowed root, and that root (the project's server only). */
  source?: string;
  allowedRoot?: string;
  backupIds?: string[];
  restoreIds?: string[];
  /** Port of the loopback website check-site may reach. */
  sitePort?: number;
  /** Credentials the token requests may use. */
  credentials?: { apiKey: string; secret: string };
  /** Give each request its own X-Forwarded-For address (for a server that trusts the loopback proxy). */
  spreadClients?: boolean;
}

export interface FuzzRequest {
  kind: string;
  method: string;
  /** Full path with query, from the server root. */
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** The error code this request must be answered with, when its mutation fixes one. */
  expectCode?: string;
}

interface Parts {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  headers: Record<string, string>;
  body: unknown;
  /** Raw body text (or bytes) instead of JSON.stringify(body). */
  rawBody?: string | Buffer;
}

/**
 * URLs check-site may be asked about without anything leaving the host: loopback (closed
 * ports, or the loopback website), and addresses the policy refuses before dialling
 * (link-local, multicast, broadcast, unspecified), in several spellings, plus bad schemes.
 */
function localUrlArb(sitePort?: number) {
  return fc
    .tuple(
      fc.constantFrom('http', 'https', 'ftp', 'file', 'javascript', 'gopher', ''),
      fc.constantFrom('127.0.0.1', '169.254.169.254', '0.0.0.0', '224.0.0.1', '255.255.255.255', '[::1]', '[::ffff:127.0.0.1]', '[fe80::1]', '[::ffff:169.254.169.254]', 'localhost', '127.1', '2130706433', '0x7f000001'),
      fc.constantFrom(undefined, 0, 1, 65535, 65536, 70000, ...(sitePort === undefined ? [] : [sitePort])),
      fc.string({ maxLength: 20 }).map((p) => encodeURIComponent(p)),
    )
    .map(([scheme, host, port, path]) => `${scheme ? scheme + '://' : ''}${host}${port === undefined ? '' : ':' + port}/${path}`);
}

/** Header values Node can put on the wire (no control characters). */
// Capped at 1000 characters: Node itself answers 431 (no envelope, before the app) when the
// request head passes 16 KiB, which is outside what the contract can describe.
const headerSafe = (v: unknown): string => String(v).replace(/[^\t\x20-\x7e]/g, '?').slice(0, 1000);

function overridesFor(env: FuzzEnv, doc: Json): Overrides {
  const schemaOf = (name: string): Json => doc.components?.schemas?.[name] ?? { type: 'string' };
  const ids = (list: string[] = [], schema: string) => (list.length ? fc.oneof(fc.constantFrom(...list), valueArb(doc, schemaOf(schema))) : valueArb(doc, schemaOf(schema)));
  const fixtures: Overrides = {};
  if (env.source && env.allowedRoot) {
    fixtures.source = fc.oneof(
      fc.constantFrom(env.source, `${env.source}/docs`, `${env.source}/hello.txt`, `${env.source}/docs/../hello.txt`, `${env.allowedRoot}/missing`, '/etc', `${env.source}/../../../../etc`),
      valueArb(doc, schemaOf('AbsolutePath')),
    );
    fixtures.target_path = fc.oneof(
      fc.stringMatching(/^[a-z0-9]{1,12}$/).map((s) => `${env.allowedRoot}/fuzz-restore/${s}`),
      fc.constantFrom(`${env.source}/hello.txt`, '/etc/fuzz', '/'),
      valueArb(doc, schemaOf('AbsolutePath')),
    );
    fixtures.paths = fc.oneof(fc.constant(['docs']), fc.constant(['hello.txt', 'docs/readme.md']), fc.array(valueArb(doc, schemaOf('RelativePath')), { minLength: 1, maxLength: 3 }));
  }
  const known = (value: string | undefined, other: fc.Arbitrary<string>) => (value === undefined ? other : fc.oneof(fc.constant(value), other));
  return {
    ...fixtures,
    backup_id: ids(env.backupIds, 'BackupId'),
    destination: fc.oneof(fc.constantFrom('local', 'cloud'), valueArb(doc, schemaOf('Destination'))),
    url: localUrlArb(env.sitePort),
    api_key: known(env.credentials?.apiKey, fc.stringMatching(/^key_[A-Za-z0-9_-]{1,30}$/)),
    secret: known(env.credentials?.secret, fc.string({ minLength: 16, maxLength: 40 })),
    // Long waits would only slow the run down.
    Prefer: fc.constantFrom('wait=0', 'wait=1', 'respond-async', 'wait=abc', 'wait=-5', 'handling=strict', 'wait=1, respond-async'),
    'X-Request-Id': fc.oneof(fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/), nastyStringArb.map(headerSafe)),
  };
}

function parameters(api: ApiDoc, op: Operation): Json[] {
  return [...(op.pathItem.parameters ?? []), ...(op.op.parameters ?? [])].map((p: Json) => deref(api.doc, p));
}

function bodySchema(api: ApiDoc, op: Operation): Json | undefined {
  const rb = op.op.requestBody ? deref(api.doc, op.op.requestBody) : undefined;
  return rb?.content?.['application/json']?.schema;
}

/** The arbitrary of schema-valid-looking request parts for an operation. */
function partsArb(api: ApiDoc, op: Operation, env: FuzzEnv): fc.Arbitrary<Parts> {
  const o = overridesFor(env, api.doc);
  const idOverride: Record<string, fc.Arbitrary<unknown>> = {
    getBackup: o['backup_id']!,
    cancelBackup: o['backup_id']!,
    ...(env.restoreIds?.length ? { getRestore: fc.oneof(fc.constantFrom(...env.restoreIds), valueArb(api.doc, api.doc.components?.schemas?.['RestoreId'] ?? {})) } : {}),
  };
  const path: Record<string, fc.Arbitrary<unknown>> = {};
  const query: Record<string, fc.Arbitrary<unknown>> = {};
  const headers: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of parameters(api, op)) {
    const arb = (p.in === 'path' && p.name === 'id' ? idOverride[op.operationId] : undefined) ?? o[p.name] ?? valueArb(api.doc, p.schema ?? {}, o);
    if (p.in === 'path') path[p.name] = arb;
    if (p.in === 'query' && p.name !== 'cursor') query[p.name] = arb;
    if (p.in === 'header') headers[p.name] = arb.map(headerSafe);
  }
  const schema = bodySchema(api, op);
  return fc.record({
    path: fc.record(path),
    query: fc.record(query, { requiredKeys: [] }),
    headers: fc.record(headers, { requiredKeys: [] }) as fc.Arbitrary<Record<string, string>>,
    body: schema ? valueArb(api.doc, schema, o) : fc.constant(undefined),
  });
}

type Mutation = {
  name: string;
  applies: (api: ApiDoc, op: Operation) => boolean;
  arb: (api: ApiDoc, op: Operation) => fc.Arbitrary<(p: Parts) => Parts>;
  /** The error code every request of this mutation must get. */
  expectCode?: string;
};

const numericQuery = (api: ApiDoc, op: Operation): string[] =>
  parameters(api, op)
    .filter((x) => x.in === 'query' && ['integer', 'number'].includes(deref(api.doc, x.schema ?? {})?.type))
    .map((x) => x.name as string);

/** Spellings of numbers that are not finite once read (JSON.parse and query coercion give Infinity or NaN). */
const NON_FINITE = ['Infinity', '-Infinity', '+Infinity', '1e400', '-1e999', '9'.repeat(400), 'NaN'];

const hasBody = (api: ApiDoc, op: Operation) => bodySchema(api, op) !== undefined;
const objectKeys = (p: Parts) => (p.body && typeof p.body === 'object' && !Array.isArray(p.body) ? Object.keys(p.body) : []);

const MUTATIONS: Mutation[] = [
  {
    name: 'wrong-type',
    applies: hasBody,
    arb: () => fc.tuple(fc.nat(), wrongTypeArb).map(([i, v]) => (p: Parts) => {
      const keys = objectKeys(p);
      if (keys.length === 0) return { ...p, body: v };
      return { ...p, body: { ...(p.body as object), [keys[i % keys.length]!]: v } };
    }),
  },
  {
    name: 'missing-required',
    applies: hasBody,
    arb: (api, op) => {
      const required: string[] = deref(api.doc, bodySchema(api, op))?.required ?? [];
      return fc.nat().map((i) => (p: Parts) => {
        const body = { ...(p.body as Record<string, unknown>) };
        if (required.length) delete body[required[i % required.length]!];
        return { ...p, body };
      });
    },
  },
  {
    name: 'extra-property',
    applies: hasBody,
    arb: () => fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), wrongTypeArb).map(([k, v]) => (p: Parts) => ({ ...p, body: { ...(p.body as object), [`x_${k}`]: v } })),
  },
  {
    name: 'huge-string',
    applies: hasBody,
    arb: () => fc.tuple(fc.nat(), fc.constantFrom(300, 5000, 66_000, 200_000)).map(([i, n]) => (p: Parts) => {
      const keys = objectKeys(p);
      const key = keys.length ? keys[i % keys.length]! : 'padding';
      return { ...p, body: { ...(p.body as object), [key]: 'x'.repeat(n) } };
    }),
  },
  { name: 'not-an-object', applies: hasBody, arb: () => wrongTypeArb.map((v) => (p: Parts) => ({ ...p, body: v })) },
  {
    name: 'invalid-json',
    applies: hasBody,
    arb: () => fc.constantFrom('{', '{"a":', "{'a':1}", '{"a":1,}', 'NaN', '\u00ff\u00fe', '[1,2', '{"a":"\\u12"}', ' ', 'true false').map((raw) => (p: Parts) => ({ ...p, rawBody: raw })),
  },
  {
    // A number no operation accepts: in a numeric query parameter, or in the body as JSON 1e400.
    name: 'non-finite-number',
    applies: (api, op) => numericQuery(api, op).length > 0 || hasBody(api, op),
    expectCode: 'VALIDATION_ERROR',
    arb: (api, op) =>
      fc.tuple(fc.constantFrom(...NON_FINITE), fc.nat()).map(([value, i]) => (p: Parts) => {
        const names = numericQuery(api, op);
        if (names.length) return { ...p, query: { ...p.query, [names[i % names.length]!]: value } };
        const keys = objectKeys(p);
        const text = JSON.stringify(p.body && typeof p.body === 'object' ? p.body : {});
        const key = keys.length ? keys[i % keys.length]! : 'n';
        const rest = text.replace(/^\{/, '').replace(/\}$/, '');
        return { ...p, rawBody: `{${rest ? `${rest},` : ''}${JSON.stringify(key)}:1e400}` };
      }),
  },
  {
    // Bytes that are not UTF-8 inside an otherwise well-formed JSON body: refused, never decoded with U+FFFD.
    name: 'not-utf8',
    applies: hasBody,
    expectCode: 'INVALID_JSON',
    arb: () =>
      fc.constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82]).map((bad) => (p: Parts) => {
        const text = JSON.stringify(p.body ?? {});
        const at = Math.max(text.indexOf('"') + 1, 1);
        return { ...p, rawBody: Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bad), Buffer.from(text.slice(at))]) };
      }),
  },
  {
    name: 'media-type',
    applies: hasBody,
    arb: () =>
      fc.constantFrom('text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/jsonx', 'application/*', 'NONE').map((ct) => (p: Parts) => ({
        ...p,
        headers: { ...p.headers, 'Content-Type': ct },
      })),
  },
  {
    name: 'odd-headers',
    applies: () => true,
    arb: () =>
      fc.record({
        'X-Request-Id': nastyStringArb.map(headerSafe),
        Authorization: fc.constantFrom('Bearer', 'Bearer ', 'Basic YTpi', 'Bearer a.b.c', 'Bearer eyJhbGciOiJub25lIn0.e30.', 'bearer x', 'Token abc'),
        Accept: fc.constantFrom('text/html', 'application/xml', '*/*', 'application/json;q=0', ''),
        'Content-Encoding': fc.constantFrom('gzip', 'br', 'identity', 'x-unknown'),
        'X-Forwarded-For': fc.constantFrom('not-an-ip', '999.1.1.1', '::::', '1.2.3.4, 5.6.7.8', ''),
      }, { requiredKeys: [] }).map((h) => (p: Parts) => ({ ...p, headers: { ...p.headers, ...h } })),
  },
  {
    name: 'bad-path-param',
    applies: (api, op) => parameters(api, op).some((x) => x.in === 'path'),
    // '', '.' and '..' would make it another route (or none), not a bad value of this one.
    arb: () => nastyStringArb.filter((v) => !['', '.', '..'].includes(String(v))).map((v) => (p: Parts) => ({ ...p, path: Object.fromEntries(Object.keys(p.path).map((k) => [k, v])) })),
  },
  {
    name: 'bad-query',
    applies: () => true,
    arb: (api, op) => {
      const names = [...parameters(api, op).filter((x) => x.in === 'query').map((x) => x.name as string), 'unknown_param'];
      return fc.tuple(fc.constantFrom(...names), fc.oneof(nastyStringArb, fc.constantFrom('-1', '0', '1.5', '99999999999', 'abc', 'true', '')), fc.boolean()).map(([name, v, twice]) => (p: Parts) => ({
        ...p,
        query: { ...p.query, [name]: twice ? [v, '1'] : v },
      }));
    },
  },
];

/** Whether the spec asks for a bearer token on the operation. */
export function secured(api: ApiDoc, op: Operation): boolean {
  return ((op.op.security ?? api.doc.security ?? []) as unknown[]).length > 0;
}

function build(api: ApiDoc, op: Operation, env: FuzzEnv, parts: Parts, kind: string, from: string | undefined, expectCode?: string): FuzzRequest {
  let path = api.basePath + op.path;
  // Capped so the request head stays under Node's 16 KiB limit (see headerSafe).
  for (const [name, value] of Object.entries(parts.path)) path = path.replace(`{${name}}`, encodeURIComponent(String(value).slice(0, 1500)));
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(parts.query)) {
    for (const v of Array.isArray(value) ? value : [value]) search.append(name, (typeof v === 'string' ? v : JSON.stringify(v)).slice(0, 2000));
  }
  const qs = search.toString();
  const headers: Record<string, string> = { Accept: 'application/json', ...(from ? { 'X-Forwarded-For': from } : {}) };
  if (secured(api, op) && env.token) headers['Authorization'] = `Bearer ${env.token}`;
  let body: string | Buffer | undefined;
  if (parts.rawBody !== undefined) body = parts.rawBody;
  else if (parts.body !== undefined) body = JSON.stringify(parts.body);
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  for (const [k, v] of Object.entries(parts.headers)) {
    if (v === 'NONE') delete headers[k];
    else headers[k] = v;
  }
  return { kind, method: op.method, path: qs ? `${path}?${qs}` : path, headers, body, ...(expectCode ? { expectCode } : {}) };
}

let clients = 0;
/** A fresh client address per request (the server trusts the loopback X-Forwarded-For). */
function nextClient(): string {
  clients++;
  return `203.0.113.${clients % 250}`.replace(/\.0$/, '.250');
}

/** `runs` requests for the operation: about half as generated, half with one mutation. */
export function sampleRequests(api: ApiDoc, op: Operation, env: FuzzEnv, runs: number, seed: number): FuzzRequest[] {
  const base = partsArb(api, op, env);
  const mutations = MUTATIONS.filter((m) => m.applies(api, op));
  const client = (): string | undefined => (env.spreadClients === false ? undefined : nextClient());
  const valid = fc.sample(base, { numRuns: Math.ceil(runs / 2), seed }).map((p) => build(api, op, env, p, 'generated', client()));
  const mutated = fc
    .sample(
      fc.tuple(base, fc.constantFrom(...mutations).chain((m) => m.arb(api, op).map((f) => ({ name: m.name, f, expectCode: m.expectCode })))),
      { numRuns: Math.floor(runs / 2), seed: seed + 1 },
    )
    .map(([p, m]) => build(api, op, env, m.f(p), m.name, client(), m.expectCode));
  return [...valid, ...mutated];
}

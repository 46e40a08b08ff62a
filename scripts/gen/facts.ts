// Facts of the contract written once in the spec, as extensions: the error catalogue
// (`x-error-catalogue` beside the ErrorCode enum) and the rate limits (`x-rate-limit` /
// `x-rate-limit-exempt` on each operation). Generation reads them from the bundles, emits them
// as typed modules (generated/error-catalogue.ts, generated/rate-limits.ts) for the server, the
// SDK, the mock and the docs, and renders them as tables into the bundles so the reference shows
// them. Nothing else may state them.
import type { OpenApiDocument } from './apis.ts';

export interface CatalogueEntry {
  /** The HTTP status of an error envelope with this code; absent for job-only codes. */
  status?: number;
  in: ('response' | 'job')[];
  meaning: string;
  action: string;
}
export type Catalogue = Record<string, CatalogueEntry>;

type Node = Record<string, unknown>;
const isObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

function errorCodeSchema(doc: OpenApiDocument): Node {
  const schema = (doc.components as { schemas?: Record<string, unknown> } | undefined)?.schemas?.ErrorCode;
  if (!isObject(schema)) throw new Error(`${doc.info.title}: no components.schemas.ErrorCode in the bundle`);
  return schema;
}

/** The catalogue of one bundle, checked against its enum: every response code has a status and is in the enum, and only those. */
export function readCatalogue(doc: OpenApiDocument): Catalogue {
  const schema = errorCodeSchema(doc);
  const catalogue = schema['x-error-catalogue'];
  if (!isObject(catalogue)) throw new Error(`${doc.info.title}: ErrorCode has no x-error-catalogue`);
  const enumCodes = new Set((schema.enum as string[] | undefined) ?? []);
  for (const [code, raw] of Object.entries(catalogue)) {
    const entry = raw as Partial<CatalogueEntry>;
    if (!Array.isArray(entry.in) || typeof entry.meaning !== 'string' || typeof entry.action !== 'string') {
      throw new Error(`x-error-catalogue ${code}: needs in, meaning and action`);
    }
    const inResponse = entry.in.includes('response');
    if (inResponse !== (typeof entry.status === 'number')) throw new Error(`x-error-catalogue ${code}: a status exactly when it occurs in a response`);
    if (inResponse !== enumCodes.has(code)) throw new Error(`x-error-catalogue ${code}: in the ErrorCode enum exactly when it occurs in a response`);
  }
  for (const code of enumCodes) if (!(code in catalogue)) throw new Error(`ErrorCode enum value ${code} has no x-error-catalogue entry`);
  return catalogue as Catalogue;
}

/** A value as TypeScript source: single-quoted strings, unquoted identifier keys. */
export function tsLiteral(value: unknown): string {
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
  if (Array.isArray(value)) return `[${value.map(tsLiteral).join(', ')}]`;
  if (isObject(value)) {
    const key = (k: string): string => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : tsLiteral(k));
    return `{ ${Object.entries(value).map(([k, v]) => `${key(k)}: ${tsLiteral(v)}`).join(', ')} }`;
  }
  return JSON.stringify(value ?? null);
}

export function errorCatalogueModule(catalogue: Catalogue, header: string): string {
  const entries = Object.entries(catalogue);
  const rows = entries.map(([code, e]) => {
    const status = e.status === undefined ? '' : `status: ${e.status}, `;
    return `  ${code}: { ${status}in: [${e.in.map(tsLiteral).join(', ')}], meaning: ${tsLiteral(e.meaning)}, action: ${tsLiteral(e.action)} },`;
  });
  const statuses = entries.filter(([, e]) => e.status !== undefined).map(([code, e]) => `  ${code}: ${e.status},`);
  const jobCodes = entries.filter(([, e]) => e.in.includes('job')).map(([code]) => tsLiteral(code));
  return `${header}
/** Every error code of both APIs: its HTTP status (codes of error envelopes), where it occurs, what it means, what a client should do. */
export const errorCatalogue = {
${rows.join('\n')}
} as const satisfies Record<string, ErrorCatalogueEntry>;

export type ErrorCode = keyof typeof errorCatalogue;

export interface ErrorCatalogueEntry {
  readonly status?: number;
  readonly in: readonly ('response' | 'job')[];
  readonly meaning: string;
  readonly action: string;
}

/** The codes an error envelope carries, each with its one HTTP status. */
export const ERROR_STATUS = {
${statuses.join('\n')}
} as const;

export type ResponseErrorCode = keyof typeof ERROR_STATUS;

/** The codes a failed job's \`error.code\` carries. */
export type JobErrorCode = ${jobCodes.join(' | ')};
`;
}

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

/** The catalogue as a Markdown table (the reference's ErrorCode description, the errors page). */
export function errorTable(catalogue: Catalogue): string {
  const rows = Object.entries(catalogue).map(
    ([code, e]) => `| \`${code}\` | ${e.status ?? '—'} | ${e.in.join(', ')} | ${cell(e.meaning)} | ${cell(e.action)} |`,
  );
  return ['| code | status | occurs in | meaning | what to do |', '|---|---|---|---|---|', ...rows].join('\n');
}

export interface RateLimitFact {
  /** What requests are counted against: the caller's account, or the client address. */
  scope: 'account' | 'address';
  windowSeconds: number;
  /** Requests per window (address scope). */
  limit?: number;
  /** Requests per window by the account's plan (account scope). */
  limits?: Record<string, number>;
  /** Failed requests (401) per window, within `limit`. */
  failedLimit?: number;
}

export interface OperationLimit {
  operationId: string;
  method: string;
  path: string;
  /** The limit, or null with the reason the operation has none. */
  limit: RateLimitFact | null;
  exempt?: string;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function operations(doc: OpenApiDocument): { method: string; path: string; op: Node }[] {
  const out: { method: string; path: string; op: Node }[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) if (isObject(item[method])) out.push({ method, path, op: item[method] as Node });
  }
  return out;
}

function parseLimit(where: string, raw: unknown): RateLimitFact {
  if (!isObject(raw)) throw new Error(`${where}: x-rate-limit must be an object`);
  const { scope, window_seconds: windowSeconds, limit, limits, failed_limit: failedLimit } = raw;
  if (scope !== 'account' && scope !== 'address') throw new Error(`${where}: x-rate-limit.scope must be account or address`);
  if (!Number.isInteger(windowSeconds) || (windowSeconds as number) <= 0) throw new Error(`${where}: x-rate-limit.window_seconds must be a positive integer`);
  const fact: RateLimitFact = { scope, windowSeconds: windowSeconds as number };
  if (scope === 'account') {
    if (!isObject(limits) || !Object.values(limits).every((n) => Number.isInteger(n))) throw new Error(`${where}: an account limit needs limits per plan`);
    fact.limits = limits as Record<string, number>;
  } else {
    if (!Number.isInteger(limit)) throw new Error(`${where}: an address limit needs limit`);
    fact.limit = limit as number;
  }
  if (failedLimit !== undefined) {
    if (!Number.isInteger(failedLimit)) throw new Error(`${where}: x-rate-limit.failed_limit must be an integer`);
    fact.failedLimit = failedLimit as number;
  }
  return fact;
}

/** Every operation's limit. Account limits are one budget shared by all account-scoped operations, so they must agree. */
export function readRateLimits(doc: OpenApiDocument): OperationLimit[] {
  const out: OperationLimit[] = [];
  for (const { method, path, op } of operations(doc)) {
    const where = `${method.toUpperCase()} ${path}`;
    const operationId = String(op.operationId);
    if (typeof op['x-rate-limit-exempt'] === 'string') {
      out.push({ operationId, method, path, limit: null, exempt: op['x-rate-limit-exempt'] });
    } else if (op['x-rate-limit'] !== undefined) {
      out.push({ operationId, method, path, limit: parseLimit(where, op['x-rate-limit']) });
    } else throw new Error(`${where}: neither x-rate-limit nor x-rate-limit-exempt`);
  }
  const accounts = out.filter((o) => o.limit?.scope === 'account').map((o) => JSON.stringify(o.limit));
  if (new Set(accounts).size > 1) throw new Error(`${doc.info.title}: account-scoped x-rate-limit differ between operations (they share one budget)`);
  return out;
}

export function rateLimitsModule(apis: { name: string; limits: OperationLimit[] }[], header: string): string {
  const fact = (f: RateLimitFact | null): string => tsLiteral(f);
  const blocks = apis.map(({ name, limits }) => {
    const rows = limits.map((l) => `    ${l.operationId}: ${fact(l.limit)},`);
    return `  ${name}: {\n${rows.join('\n')}\n  },`;
  });
  const account = apis.flatMap((a) => a.limits).find((l) => l.limit?.scope === 'account')?.limit ?? null;
  return `${header}
export interface RateLimit {
  /** What requests are counted against: the caller's account (all its authenticated operations together), or the client address (per operation). */
  readonly scope: 'account' | 'address';
  /** Length of the fixed window, aligned to the clock (a 3600 s window runs from the full hour). */
  readonly windowSeconds: number;
  /** Requests per window (address scope). */
  readonly limit?: number;
  /** Requests per window by plan (account scope). */
  readonly limits?: Readonly<Record<string, number>>;
  /** Failed (401) requests per window and client address, within \`limit\`. */
  readonly failedLimit?: number;
}

/** Every operation's limit, by API and operationId (null: not rate limited). */
export const rateLimits = {
${blocks.join('\n')}
} as const satisfies Record<string, Record<string, RateLimit | null>>;

/** The budget every account-scoped operation shares: requests per window by plan. */
export const accountRateLimit = ${fact(account)} as const;

export type Plan = keyof typeof accountRateLimit.limits;
`;
}

function windowText(seconds: number): string {
  if (seconds === 3600) return 'hour';
  if (seconds === 60) return 'minute';
  return `${seconds} seconds`;
}

/** One line saying what a limit is, for descriptions and docs. */
export function rateLimitText(fact: RateLimitFact): string {
  const per = windowText(fact.windowSeconds);
  if (fact.scope === 'account') {
    const plans = Object.entries(fact.limits ?? {}).map(([plan, n]) => `${n} (\`${plan}\`)`).join(', ');
    return `${plans} requests per ${per} per account, shared by all authenticated operations`;
  }
  const failed = fact.failedLimit === undefined ? '' : `, of which at most ${fact.failedLimit} may fail (\`401\`)`;
  return `${fact.limit} requests per ${per} per client address${failed}`;
}

/** The limits of an API as a Markdown table, operations with the same limit on one row. */
export function rateLimitTable(limits: OperationLimit[], basePath = ''): string {
  const rows = new Map<string, { ops: string[]; text: string }>();
  for (const l of limits) {
    const key = l.limit === null ? `exempt ${l.exempt}` : JSON.stringify(l.limit);
    const text = l.limit === null ? `not limited (${l.exempt?.replace(/^\w/, (c) => c.toLowerCase()).replace(/\.$/, '')})` : rateLimitText(l.limit);
    const row = rows.get(key) ?? { ops: [], text };
    row.ops.push(`\`${l.method.toUpperCase()} ${basePath}${l.path}\``);
    rows.set(key, row);
  }
  return ['| operations | limit |', '|---|---|', ...[...rows.values()].map((r) => `| ${r.ops.join(', ')} | ${cell(r.text)} |`)].join('\n');
}

/** Where the spec's info.description wants the rate-limit table. */
export const RATE_LIMIT_TABLE_MARKER = '<!-- x-rate-limit table -->';

/**
 * Renders the facts into a bundle (in place): the catalogue table under the ErrorCode
 * description, each operation's limit at the end of its description, and the API's limit table
 * at the marker in info.description.
 */
export function renderFacts(doc: OpenApiDocument, catalogue: Catalogue, limits: OperationLimit[]): void {
  const schema = errorCodeSchema(doc);
  schema.description = `${String(schema.description ?? '').trimEnd()}\n\n${errorTable(catalogue)}\n`;
  for (const { path, method, op } of operations(doc)) {
    const limit = limits.find((l) => l.path === path && l.method === method);
    if (!limit?.limit) continue;
    op.description = `${String(op.description ?? '').trimEnd()}\n\n**Rate limit:** ${rateLimitText(limit.limit)}.\n`;
  }
  const info = doc.info as { description?: string };
  if (info.description?.includes(RATE_LIMIT_TABLE_MARKER)) {
    info.description = info.description.replace(RATE_LIMIT_TABLE_MARKER, rateLimitTable(limits));
  }
}

/** What the mock answers with: the envelope, catalogue errors, ids in the server's format. */
import { ERROR_STATUS, type ResponseErrorCode } from '../../../generated/error-catalogue.ts';

export interface MockResponse {
  status: number;
  headers: Record<string, string>;
  /** A JSON value; undefined for an empty body. */
  body?: unknown;
  /** Media type of the body (default application/json). */
  contentType?: string;
}

/** Thrown by the state layer to answer with a catalogue error. */
export class MockApiError extends Error {
  readonly code: ResponseErrorCode;
  readonly details: Record<string, unknown>;
  readonly headers: Record<string, string>;
  constructor(code: ResponseErrorCode, message: string, details: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(message);
    this.code = code;
    this.details = details;
    this.headers = headers;
  }
}

/** The error envelope for a catalogue code, with the status the catalogue gives it (meta is filled in later). */
export function errorResponse(error: MockApiError): MockResponse {
  return {
    status: ERROR_STATUS[error.code],
    headers: { ...error.headers },
    body: { success: false, error: { code: error.code, message: error.message, details: error.details }, meta: {} },
  };
}

export function successResponse(status: number, data: unknown, headers: Record<string, string> = {}): MockResponse {
  return { status, headers, body: { success: true, data, meta: {} } };
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A ULID: 48 bits of time and 80 random bits in Crockford base 32, as the server's ids carry. */
export function ulid(now = Date.now()): string {
  let time = '';
  for (let t = now, i = 0; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  const random = crypto.getRandomValues(new Uint8Array(16));
  let rest = '';
  for (let i = 0; i < 16; i++) rest += CROCKFORD[random[i]! % 32];
  return time + rest;
}

export const newId = (prefix: string): string => `${prefix}_${ulid()}`;

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's X-Request-Id when it is one the contract echoes, else a new req_ id. */
export function requestIdFor(supplied: string | null): string {
  return supplied !== null && SAFE_REQUEST_ID.test(supplied) ? supplied : newId('req');
}

type Node = Record<string, unknown>;
const isObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `base` with `over` laid on top, objects merged key by key (arrays and scalars replaced). */
export function merge<T>(base: T, over: unknown): T {
  if (!isObject(base) || !isObject(over)) return (over === undefined ? base : over) as T;
  const out: Node = { ...base };
  for (const [key, value] of Object.entries(over)) out[key] = merge(out[key], value);
  return out as T;
}

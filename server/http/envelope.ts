import type { ErrorCode } from './errors.ts';

/** The envelope every response body of both APIs uses. */
export interface Meta {
  request_id: string;
  timestamp: string;
}

export interface SuccessBody<T> {
  success: true;
  data: T;
  meta: Meta;
}

export interface ErrorBody {
  success: false;
  error: { code: ErrorCode; message: string; details: Record<string, unknown> };
  meta: Meta;
}

let stampedAt = Number.NaN;
let stamp = '';

/** The time as an ISO 8601 string, formatted once per millisecond however many answers share it. */
function isoNow(): string {
  const ms = Date.now();
  if (ms !== stampedAt) {
    stamp = new Date(ms).toISOString();
    stampedAt = ms;
  }
  return stamp;
}

export function meta(requestId: string, now?: Date): Meta {
  return { request_id: requestId, timestamp: now ? now.toISOString() : isoNow() };
}

export function successBody<T>(data: T, requestId: string): SuccessBody<T> {
  return { success: true, data, meta: meta(requestId) };
}

export function errorBody(
  code: ErrorCode,
  message: string,
  details: Record<string, unknown>,
  requestId: string,
): ErrorBody {
  return { success: false, error: { code, message, details }, meta: meta(requestId) };
}

const settled = new WeakSet<object>();

/**
 * Freezes `data` (deeply) and marks it as a response's `data` that never changes, such as a
 * finished job presented once: the response check validates it against an operation's schema
 * once, and the rest of each answer's envelope every time.
 */
export function settledData<T extends object>(data: T): T {
  const freeze = (value: unknown): void => {
    if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
    Object.freeze(value);
    for (const inner of Object.values(value)) freeze(inner);
  };
  freeze(data);
  settled.add(data);
  return data;
}

/** Whether `data` was marked by settledData (and so is frozen). */
export function isSettled(data: unknown): boolean {
  return typeof data === 'object' && data !== null && settled.has(data);
}

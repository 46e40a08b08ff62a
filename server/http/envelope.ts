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

export function meta(requestId: string, now = new Date()): Meta {
  return { request_id: requestId, timestamp: now.toISOString() };
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

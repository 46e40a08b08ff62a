/**
 * The one error type the SDK throws. HTTP errors carry the envelope's code, message and
 * details; failures without an HTTP answer use status 0 and a client-side code.
 */

import { errorCatalogue, type ErrorCatalogueEntry, type ResponseErrorCode } from '../../generated/error-catalogue.ts';

export { errorCatalogue, type ErrorCatalogueEntry, type JobErrorCode } from '../../generated/error-catalogue.ts';

/** What the catalogue says of a code (status, meaning, what to do); undefined for a code it does not know. */
export function errorInfo(code: string): ErrorCatalogueEntry | undefined {
  return Object.hasOwn(errorCatalogue, code) ? (errorCatalogue as Record<string, ErrorCatalogueEntry>)[code] : undefined;
}

/**
 * Codes of the contract's catalogue an error answer carries (generated from the spec; the server
 * may add more in a minor version: act on the HTTP status of a code you do not know).
 */
export type ApiErrorCode = ResponseErrorCode;

/**
 * Client-side codes, never sent by the server:
 * NETWORK_ERROR (no HTTP answer), TIMEOUT (no answer within the timeout),
 * ABORTED (the caller's signal fired), UNEXPECTED_RESPONSE (an error body that is not the envelope,
 * e.g. from a proxy or the mock's own validation).
 */
export type ClientErrorCode = 'NETWORK_ERROR' | 'TIMEOUT' | 'ABORTED' | 'UNEXPECTED_RESPONSE';

export type ErrorCode = ApiErrorCode | ClientErrorCode | (string & {});

export interface ApiClientErrorInit {
  status: number;
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  requestId?: string | undefined;
  /** Milliseconds the server asked to wait (Retry-After), when it said so. */
  retryAfterMs?: number | undefined;
  /** How many HTTP attempts were made before giving up. */
  attempts?: number;
  cause?: unknown;
}

export class ApiClientError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  readonly requestId: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly attempts: number;

  constructor(init: ApiClientErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'ApiClientError';
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? {};
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
    this.attempts = init.attempts ?? 1;
  }
}

export function isApiClientError(value: unknown): value is ApiClientError {
  return value instanceof ApiClientError;
}

interface ErrorEnvelope {
  success: false;
  error: { code: string; message: string; details?: Record<string, unknown> };
  meta?: { request_id?: string };
}

function isErrorEnvelope(body: unknown): body is ErrorEnvelope {
  if (typeof body !== 'object' || body === null) return false;
  const error = (body as { error?: unknown }).error;
  return (
    (body as { success?: unknown }).success === false &&
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'string' &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}

/** Builds the error for a non-2xx answer from its (already read) body text. */
export function errorFromResponse(
  response: Response,
  bodyText: string,
  sentRequestId: string | undefined,
  extra: { retryAfterMs?: number | undefined; attempts: number },
): ApiClientError {
  let body: unknown;
  try {
    body = bodyText === '' ? undefined : JSON.parse(bodyText);
  } catch {
    body = bodyText;
  }
  const headerId = response.headers.get('x-request-id') ?? undefined;
  if (isErrorEnvelope(body)) {
    return new ApiClientError({
      status: response.status,
      code: body.error.code,
      message: body.error.message,
      details: body.error.details ?? {},
      requestId: headerId ?? body.meta?.request_id ?? sentRequestId,
      ...extra,
    });
  }
  // Not the envelope: a proxy, a gateway, or the mock's own problem+json answer.
  const problem = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const title = typeof problem.detail === 'string' ? problem.detail : problem.title;
  return new ApiClientError({
    status: response.status,
    code: 'UNEXPECTED_RESPONSE',
    message: typeof title === 'string' ? title : `HTTP ${response.status} without an error envelope`,
    details: { body: body ?? null },
    requestId: headerId ?? sentRequestId,
    ...extra,
  });
}

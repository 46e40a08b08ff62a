/**
 * The error catalogue shared by both APIs (every code and the one HTTP status it answers with)
 * is generated from the spec's x-error-catalogue. Handlers and middleware throw ApiError; the
 * error middleware turns it into the envelope.
 */
import { ERROR_STATUS, type ResponseErrorCode } from '../../generated/error-catalogue.ts';

export { ERROR_STATUS };
export type ErrorCode = ResponseErrorCode;

export interface ValidationProblem {
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown>;
  /** Extra response headers, e.g. Retry-After on RATE_LIMITED or Allow on METHOD_NOT_ALLOWED. */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = details;
    this.headers = headers;
  }
}

export function validationError(errors: ValidationProblem[], message = 'The request is not valid.'): ApiError {
  return new ApiError('VALIDATION_ERROR', message, { errors });
}

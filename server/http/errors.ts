/**
 * The error catalogue shared by both APIs: every error code and the HTTP status it answers with.
 * Handlers and middleware throw ApiError; the error middleware turns it into the envelope.
 */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  INVALID_JSON: 400,
  UNAUTHORIZED: 401,
  TOKEN_EXPIRED: 401,
  INVALID_CREDENTIALS: 401,
  SOURCE_NOT_ALLOWED: 403,
  TARGET_NOT_ALLOWED: 403,
  HTTPS_REQUIRED: 403,
  NOT_FOUND: 404,
  BACKUP_NOT_FOUND: 404,
  RESTORE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  BACKUP_NOT_COMPLETED: 409,
  JOB_FINISHED: 409,
  JOB_NOT_FINISHED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INVALID_SOURCE: 422,
  INVALID_TARGET: 422,
  URL_NOT_ALLOWED: 422,
  DESTINATION_UNAVAILABLE: 422,
  RATE_LIMITED: 429,
  QUEUE_FULL: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  STORAGE_FULL: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

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

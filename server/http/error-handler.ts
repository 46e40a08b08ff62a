import type { ErrorRequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { StoreFullError, StoreUnavailableError } from '../store/errors.ts';
import { errorBody } from './envelope.ts';
import { ApiError, type ValidationProblem } from './errors.ts';
import { hasBody } from './json-body.ts';
import { requestIdOf } from './locals.ts';

interface BodyParserError extends Error {
  type?: string;
  status: number;
  expose: boolean;
}

interface ValidatorError extends Error {
  status: number;
  path?: string;
  errors?: Array<{ path?: string; message?: string; errorCode?: string }>;
}

/** body-parser's http-errors: `expose` set, a 4xx status, usually a `type` (not for a body that fails to decompress). */
function isBodyParserError(err: unknown): err is BodyParserError {
  const e = err as BodyParserError;
  return err instanceof Error && e.expose === true && typeof e.status === 'number' && e.status >= 400 && e.status < 500 && !('errors' in err);
}

function isValidatorError(err: unknown): err is ValidatorError {
  return err instanceof Error && typeof (err as ValidatorError).status === 'number' && Array.isArray((err as ValidatorError).errors);
}

/**
 * express-openapi-validator paths ("/body/options/compression", ".body.source", "/params/id") as
 * the contract's JSON Pointers into the request: /body/…, /query/…, /path/…, /headers/….
 */
function problemPath(path: string | undefined): string {
  if (!path) return '/';
  const pointer = path.startsWith('.') ? path.replace(/\./g, '/') : path;
  return pointer.replace(/^\/params(?=\/|$)/, '/path');
}

function fromBodyParser(err: BodyParserError): ApiError | null {
  switch (err.type) {
    case 'entity.too.large':
      return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than 64 KiB.', { limit_bytes: 65536 });
    case 'entity.parse.failed':
      return new ApiError('INVALID_JSON', 'The request body is not valid JSON.');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be UTF-8 JSON.');
    case 'request.aborted':
    case 'request.size.invalid':
      return new ApiError('INVALID_JSON', 'The request body was incomplete.');
  }
  switch (err.status) {
    case 413:
      return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than 64 KiB.', { limit_bytes: 65536 });
    case 415:
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be UTF-8 JSON.');
    default:
      // e.g. a Content-Encoding whose data does not decompress
      return new ApiError('INVALID_JSON', 'The request body could not be read as JSON.');
  }
}

/** Request-side validator errors; a 500 from it is a response that broke the contract. */
function fromValidator(err: ValidatorError, requestHadBody: boolean): ApiError | null {
  // The validator calls a missing body an unsupported media type; with no body at all it is a missing field.
  if (err.status === 415 && !requestHadBody) {
    return new ApiError('VALIDATION_ERROR', 'The request is not valid.', { errors: [{ path: '/body', message: 'a JSON body is required' }] });
  }
  const problems: ValidationProblem[] = (err.errors ?? []).map((e) => ({
    path: problemPath(e.path),
    message: e.message ?? 'is not valid',
  }));
  switch (err.status) {
    case 400:
      return new ApiError('VALIDATION_ERROR', 'The request is not valid.', { errors: problems });
    case 401:
      return new ApiError('UNAUTHORIZED', 'A valid bearer token is required.', {}, { 'WWW-Authenticate': 'Bearer realm="backup-api"' });
    case 404:
      return new ApiError('NOT_FOUND', 'No such resource.');
    case 405:
      return new ApiError('METHOD_NOT_ALLOWED', 'This method is not allowed on this path.');
    case 413:
      return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than 64 KiB.', { limit_bytes: 65536 });
    case 415:
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be sent as application/json.');
    default:
      return null;
  }
}

/** The store's failures: down (closed during shutdown, busy, unreachable) is 503 with Retry-After; out of space is 507. */
function fromStore(err: unknown): ApiError | null {
  if (err instanceof StoreUnavailableError) {
    return new ApiError('SERVICE_UNAVAILABLE', 'The service cannot serve this request right now; retry shortly.', {}, { 'Retry-After': '5' });
  }
  if (err instanceof StoreFullError) return new ApiError('STORAGE_FULL', 'The server has no space left to record this request; nothing was kept.');
  return null;
}

export function sendError(res: Response, err: ApiError): void {
  for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  res.status(err.status).json(errorBody(err.code, err.message, err.details, requestIdOf(res)));
}

/** The last middleware: every error becomes the envelope; anything unexpected is logged and answered 500. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    let apiError: ApiError | null = null;
    if (err instanceof ApiError) apiError = err;
    else if (isBodyParserError(err)) apiError = fromBodyParser(err);
    else if (isValidatorError(err)) apiError = fromValidator(err, hasBody(req.headers));
    else apiError = fromStore(err);

    if (!apiError) {
      logger.error({ err, request_id: requestIdOf(res), method: req.method, path: req.path }, 'unhandled error');
      apiError = new ApiError('INTERNAL_ERROR', 'An internal error occurred.');
    } else if (apiError.status >= 500) {
      logger.error({ err, request_id: requestIdOf(res), method: req.method, path: req.path }, apiError.message);
    }
    sendError(res, apiError);
  };
}

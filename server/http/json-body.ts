import express, { type RequestHandler } from 'express';
import { ApiError } from './errors.ts';

export const BODY_LIMIT_BYTES = 64 * 1024;

/** Whether the request carries a body (a length above zero, or chunked). */
export function hasBody(headers: { 'content-length'?: string; 'transfer-encoding'?: string }): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && length !== '0';
}

/**
 * JSON request bodies: a body with any other media type is 415, over 64 KiB is 413, unparsable is
 * 400 INVALID_JSON (the parser's errors are mapped by the error handler). Bodiless requests pass.
 */
export function jsonBody(): RequestHandler[] {
  const mediaType: RequestHandler = (req, _res, next) => {
    if (hasBody(req.headers) && !req.is(['application/json', 'application/*+json'])) {
      next(new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be sent as application/json.', {
        content_type: req.get('content-type') ?? null,
      }));
      return;
    }
    next();
  };
  const parse = express.json({ limit: BODY_LIMIT_BYTES, strict: true, type: ['application/json', 'application/*+json'] });
  return [mediaType, parse];
}

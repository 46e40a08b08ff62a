import { isUtf8 } from 'node:buffer';
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
 * JSON request bodies, for the operations that take one: a body with any other media type (or a
 * charset other than UTF-8) is 415, over 64 KiB is 413, bytes that are not UTF-8 or not JSON are
 * 400 INVALID_JSON, never decoded with replacement characters (the parser's errors are mapped by
 * the error handler). Bodiless requests pass. Operations without a body do not mount this: a
 * body sent to them is not read.
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
  const parse = express.json({
    limit: BODY_LIMIT_BYTES,
    strict: true,
    type: ['application/json', 'application/*+json'],
    verify: (_req, _res, bytes, charset) => {
      if (charset.toLowerCase() !== 'utf-8') throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be UTF-8 JSON.', { content_type: _req.headers['content-type'] ?? null });
      if (!isUtf8(bytes)) throw new ApiError('INVALID_JSON', 'The request body is not valid UTF-8.');
    },
  });
  return [mediaType, parse];
}

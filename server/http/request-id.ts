import type { RequestHandler } from 'express';
import { newId } from '../ids.ts';
import { setRequestId } from './locals.ts';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a well-formed client X-Request-Id, otherwise assigns a new req_ id; sets the response header. */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    const given = req.get('x-request-id');
    const id = given !== undefined && SAFE_REQUEST_ID.test(given) ? given : newId('req');
    setRequestId(res, id);
    res.setHeader('X-Request-Id', id);
    next();
  };
}

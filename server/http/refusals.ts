import type { ErrorRequestHandler, Request } from 'express';
import type { ServiceEvents } from '../events.ts';
import { clientAddress } from './client-address.ts';
import { ApiError } from './errors.ts';
import { requestIdOf } from './locals.ts';
import { bindingLimit } from './rate-limit.ts';

/**
 * Error middleware, before the error handler: reports the refusals operators watch — every 401
 * (auth.failed, with the client address) and every 429 of a rate limit (ratelimit.rejected) —
 * and passes the error on unchanged.
 */
export function reportRefusals(events: ServiceEvents, operationOf: (req: Request) => string): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (err instanceof ApiError && err.status === 401) {
      events.emit('auth.failed', { requestId: requestIdOf(res), clientIp: clientAddress(req), reason: err.code, operation: operationOf(req) });
    } else if (err instanceof ApiError && err.code === 'RATE_LIMITED') {
      events.emit('ratelimit.rejected', { limit: bindingLimit(res) ?? 'unknown' });
    }
    next(err);
  };
}

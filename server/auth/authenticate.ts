import type { RequestHandler } from 'express';
import type { Store } from '../store/index.ts';
import { requireBearer } from './middleware.ts';
import type { TokenService } from './tokens.ts';

/**
 * Bearer authentication for protected operations. A request that fails it is also counted by
 * `countFailure` (the client address's failed-authentication limiter, shared with POST
 * /auth/token): its headers describe that limit, and past it the answer is 429 instead of 401.
 */
export function authenticate(tokens: TokenService, store: Store, countFailure?: RequestHandler): RequestHandler {
  const bearer = requireBearer(tokens, store);
  return (req, res, next) => {
    bearer(req, res, (authError?: unknown) => {
      if (authError === undefined || !countFailure) {
        next(authError);
        return;
      }
      Promise.resolve(countFailure(req, res, (limitError?: unknown) => next(limitError ?? authError))).catch(next);
    });
  };
}

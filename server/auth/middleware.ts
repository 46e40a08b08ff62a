import type { RequestHandler } from 'express';
import { ApiError } from '../http/errors.ts';
import { setAuth } from '../http/locals.ts';
import type { Store } from '../store/index.ts';
import { KeyCache } from './key-cache.ts';
import type { TokenService } from './tokens.ts';

const CHALLENGE = 'Bearer realm="backup-api"';

function unauthorized(message: string, code: 'UNAUTHORIZED' | 'TOKEN_EXPIRED' = 'UNAUTHORIZED'): ApiError {
  const challenge = code === 'TOKEN_EXPIRED' ? `${CHALLENGE}, error="invalid_token", error_description="token expired"` : CHALLENGE;
  return new ApiError(code, message, {}, { 'WWW-Authenticate': challenge });
}

/**
 * Bearer authentication: a valid, unexpired token whose API key still exists unrevoked and still
 * belongs to the token's account. Sets the caller's account, key and plan on the response locals.
 * Keys are looked up through a KeyCache: a change to a key is seen within KEY_CHANGES_SEEN_WITHIN_MS.
 */
export function requireBearer(tokens: TokenService, store: Store): RequestHandler {
  const keys = new KeyCache(store.accounts);
  // Express 5 passes a rejected promise (e.g. the database failing) on to the error handler.
  return async (req, res, next) => {
    const header = req.get('authorization');
    const match = header ? /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)[ ]*$/i.exec(header) : null;
    if (!match) {
      next(unauthorized(header ? 'The Authorization header must use the Bearer scheme.' : 'A bearer token is required.'));
      return;
    }
    let claims;
    try {
      claims = await tokens.verify(match[1]!);
    } catch (err) {
      if (err instanceof ApiError) next(unauthorized(err.message, err.code === 'TOKEN_EXPIRED' ? 'TOKEN_EXPIRED' : 'UNAUTHORIZED'));
      else next(err);
      return;
    }
    const key = await keys.get(claims.keyId);
    if (!key || key.revokedAt || key.accountId !== claims.accountId) {
      next(unauthorized('The access token is not valid.'));
      return;
    }
    setAuth(res, { accountId: key.accountId, keyId: key.id, plan: key.plan });
    next();
  };
}

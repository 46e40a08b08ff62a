import type { NextFunction, RequestHandler, Response } from 'express';
import { ApiError } from '../http/errors.ts';
import { setAuth } from '../http/locals.ts';
import type { ApiKeyRecord, Store } from '../store/index.ts';
import { KeyCache } from './key-cache.ts';
import type { TokenClaims, TokenService } from './tokens.ts';

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
  const accept = (res: Response, claims: TokenClaims, key: ApiKeyRecord | undefined, next: NextFunction) => {
    if (!key || key.revokedAt || key.accountId !== claims.accountId) {
      next(unauthorized('The access token is not valid.'));
      return;
    }
    setAuth(res, { accountId: key.accountId, keyId: key.id, plan: key.plan });
    next();
  };
  // Express 5 passes a rejected promise (e.g. the database failing) on to the error handler.
  const verify = async (token: string, res: Response, next: NextFunction) => {
    let claims;
    try {
      claims = await tokens.verify(token);
    } catch (err) {
      if (err instanceof ApiError) next(unauthorized(err.message, err.code === 'TOKEN_EXPIRED' ? 'TOKEN_EXPIRED' : 'UNAUTHORIZED'));
      else next(err);
      return;
    }
    accept(res, claims, await keys.get(claims.keyId), next);
  };
  return (req, res, next) => {
    const header = req.get('authorization');
    const match = header ? /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)[ ]*$/i.exec(header) : null;
    if (!match) {
      next(unauthorized(header ? 'The Authorization header must use the Bearer scheme.' : 'A bearer token is required.'));
      return;
    }
    const token = match[1]!;
    // A token and key seen before, both still current: decided without waiting on anything.
    const claims = tokens.verifiedBefore(token);
    const key = claims && keys.peek(claims.keyId);
    if (claims && key) {
      accept(res, claims, key, next);
      return;
    }
    return verify(token, res, next);
  };
}

import { randomBytes } from 'node:crypto';
import { SignJWT, errors, jwtVerify } from 'jose';
import { ApiError } from '../http/errors.ts';

export const TOKEN_LIFETIME_SECONDS = 15 * 60;
export const TOKEN_ISSUER = 'backup-service';
export const TOKEN_AUDIENCE = 'backup-api';

export interface IssuedToken {
  accessToken: string;
  expiresIn: number;
  expiresAt: Date;
}

export interface TokenClaims {
  accountId: string;
  /** The API key the token was issued for; checked on every request so revoking it ends the token. */
  keyId: string;
  jti: string;
}

/** Verified tokens kept so a client's repeated requests skip the signature check (until their exp). */
const VERIFIED_CACHE_SIZE = 10_000;

/** HS256 access tokens. The algorithm list on verify is explicit: `alg: none` and others fail. */
export class TokenService {
  private readonly key: Uint8Array;
  private readonly now: () => number;
  /** Exact token text -> its claims and exp (seconds); only tokens that passed full verification. */
  private readonly verified = new Map<string, TokenClaims & { exp: number }>();

  constructor(signingKey: Uint8Array, now: () => number = Date.now) {
    if (signingKey.length < 32) throw new Error('The token signing key must be at least 32 bytes');
    this.key = signingKey;
    this.now = now;
  }

  async issue(accountId: string, keyId: string): Promise<IssuedToken> {
    const iat = Math.floor(this.now() / 1000);
    const exp = iat + TOKEN_LIFETIME_SECONDS;
    const accessToken = await new SignJWT({ key_id: keyId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(TOKEN_ISSUER)
      .setAudience(TOKEN_AUDIENCE)
      .setSubject(accountId)
      .setJti(randomBytes(16).toString('base64url'))
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(this.key);
    return { accessToken, expiresIn: TOKEN_LIFETIME_SECONDS, expiresAt: new Date(exp * 1000) };
  }

  /** The claims of a token verified before and not expired, without waiting; otherwise null (then call verify). */
  verifiedBefore(token: string): TokenClaims | null {
    const cached = this.verified.get(token);
    if (!cached || cached.exp * 1000 <= this.now()) return null;
    return { accountId: cached.accountId, keyId: cached.keyId, jti: cached.jti };
  }

  /** Throws ApiError TOKEN_EXPIRED for an expired but otherwise valid token, UNAUTHORIZED for anything else. */
  async verify(token: string): Promise<TokenClaims> {
    const cached = this.verified.get(token);
    if (cached) {
      if (cached.exp * 1000 <= this.now()) {
        this.verified.delete(token);
        throw new ApiError('TOKEN_EXPIRED', 'The access token has expired; request a new one.');
      }
      return { accountId: cached.accountId, keyId: cached.keyId, jti: cached.jti };
    }
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: TOKEN_ISSUER,
        audience: TOKEN_AUDIENCE,
        requiredClaims: ['sub', 'jti', 'iat', 'exp', 'key_id'],
        currentDate: new Date(this.now()),
      });
      if (typeof payload.sub !== 'string' || typeof payload.key_id !== 'string' || typeof payload.jti !== 'string') {
        throw new ApiError('UNAUTHORIZED', 'The access token is not valid.');
      }
      const claims = { accountId: payload.sub, keyId: payload.key_id, jti: payload.jti };
      if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(token, { ...claims, exp: payload.exp! });
      return claims;
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if (err instanceof errors.JWTExpired) throw new ApiError('TOKEN_EXPIRED', 'The access token has expired; request a new one.');
      throw new ApiError('UNAUTHORIZED', 'The access token is not valid.');
    }
  }
}

/** Bearer tokens for the Backup API: fetched from the key and secret, renewed before they expire. */
import type { TokenProvider } from './transport.ts';

export interface IssuedToken {
  access_token: string;
  /** Lifetime in seconds. */
  expires_in: number;
}

export interface TokenSourceOptions {
  /** Asks the server for a new token (POST /auth/token). */
  obtain: () => Promise<IssuedToken>;
  /** Whether a request to this URL carries the token. */
  needsToken: (url: URL, method: string) => boolean;
  /** Renew this long before expiry, in ms (default 60 000, at most half the lifetime). */
  refreshMarginMs?: number;
  now?: () => number;
}

export function createTokenSource(options: TokenSourceOptions): TokenProvider & { current(): string | undefined } {
  const now = options.now ?? Date.now;
  const margin = options.refreshMarginMs ?? 60_000;
  let token: string | undefined;
  let renewAt = 0;
  let pending: Promise<string> | undefined;

  async function obtain(): Promise<string> {
    // The lifetime is counted on the local clock from receipt, so a skewed server clock does no harm.
    const requestedAt = now();
    const issued = await options.obtain();
    const lifetimeMs = issued.expires_in * 1000;
    token = issued.access_token;
    renewAt = requestedAt + lifetimeMs - Math.min(margin, lifetimeMs / 2);
    return token;
  }

  return {
    async tokenFor(url, method) {
      if (!options.needsToken(url, method)) return undefined;
      if (token !== undefined && now() < renewAt) return token;
      // Concurrent calls share one token request.
      pending ??= obtain().finally(() => {
        pending = undefined;
      });
      return pending;
    },
    expire(expired) {
      if (token === expired) {
        token = undefined;
        renewAt = 0;
      }
    },
    current() {
      return token;
    },
  };
}

/** The typed Backup API client: openapi-fetch over the generated `paths`, with tokens, retries and timeouts. */
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from '../../generated/backup-types.ts';
import { backupOperations } from '../../generated/backup-handlers.ts';
import { ApiClientError } from './errors.ts';
import { createTokenSource } from './token.ts';
import { createTransport, type FetchFunction, type RetryEvent } from './transport.ts';
import type { RetryOptions } from './retry.ts';

export type BackupPaths = paths;

export interface BackupClientOptions {
  /** The API's server URL, path included: e.g. http://localhost:8080/api/v1 (mock: http://127.0.0.1:4010/api/v1). */
  baseUrl: string;
  apiKey: string;
  secret: string;
  /** Timeout of each HTTP attempt in ms (default 30 000). */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** Renew the token this long before it expires, in ms (default 60 000). */
  refreshMarginMs?: number;
  /** The fetch to send with (default globalThis.fetch). */
  fetch?: FetchFunction;
  onRetry?: (event: RetryEvent) => void;
}

export type BackupClient = Client<paths> & {
  /** The token in use, if one was obtained (for diagnostics). */
  currentToken(): string | undefined;
};

const templates = Object.values(backupOperations).map((op) => ({
  method: op.method.toUpperCase(),
  pattern: new RegExp(`^${op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  secured: op.security.length > 0,
}));

/** Whether the spec asks for a bearer token on this operation (path relative to the API's base URL); unknown ones get one. */
export function needsBearer(method: string, path: string): boolean {
  return templates.find((t) => t.method === method.toUpperCase() && t.pattern.test(path))?.secured ?? true;
}

/** POSTs that are safe to repeat after a timeout or a dropped connection: a token request and a cancel. */
export const SAFE_POSTS = [/\/auth\/token$/, /\/backup\/[^/]+\/cancel$/];

export function createBackupClient(options: BackupClientOptions): BackupClient {
  const base = new URL(options.baseUrl.replace(/\/+$/, '') + '/');
  const relative = (url: URL): string => '/' + url.pathname.slice(base.pathname.length);
  const tokens = createTokenSource({
    needsToken: (url, method) => needsBearer(method, relative(url)),
    refreshMarginMs: options.refreshMarginMs,
    obtain: async () => {
      const { data } = await client.POST('/auth/token', { body: { api_key: options.apiKey, secret: options.secret } });
      if (!data) throw new ApiClientError({ status: 0, code: 'UNEXPECTED_RESPONSE', message: 'Empty token answer.' });
      return data.data;
    },
  });
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: createTransport({
      fetch: options.fetch,
      timeoutMs: options.timeoutMs,
      retry: options.retry,
      safePosts: SAFE_POSTS,
      auth: tokens,
      onRetry: options.onRetry,
    }),
  });
  return Object.assign(client, { currentToken: () => tokens.current() });
}

/** The typed public tools client: openapi-fetch over the generated `paths`, with retries and timeouts, no auth. */
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from '../../generated/tools-types.ts';
import { createTransport, type FetchFunction, type RetryEvent } from './transport.ts';
import type { RetryOptions } from './retry.ts';

export type ToolsPaths = paths;

export interface ToolsClientOptions {
  /** The site origin, e.g. http://localhost:8080 (mock: http://127.0.0.1:4011); paths carry /api/... */
  baseUrl: string;
  timeoutMs?: number;
  retry?: RetryOptions;
  fetch?: FetchFunction;
  onRetry?: (event: RetryEvent) => void;
}

export type ToolsClient = Client<paths>;

/**
 * POSTs that are safe to repeat after a timeout or a dropped connection: a site check reads only,
 * and a repeated subscription never creates a duplicate. A contact message is not repeated.
 */
export const SAFE_POSTS = [/\/api\/tools\/check-site$/, /\/api\/newsletter\/subscribe$/];

export function createToolsClient(options: ToolsClientOptions): ToolsClient {
  return createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: createTransport({
      fetch: options.fetch,
      timeoutMs: options.timeoutMs,
      retry: options.retry,
      safePosts: SAFE_POSTS,
      onRetry: options.onRetry,
    }),
  });
}

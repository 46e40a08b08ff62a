/**
 * The fetch function both typed clients hand to openapi-fetch: request ids, bearer tokens,
 * a timeout per attempt, retries with backoff, and ApiClientError for every failure.
 */
import { ApiClientError, errorFromResponse } from './errors.ts';
import {
  RETRYABLE_IF_SAFE_STATUSES,
  RETRYABLE_STATUSES,
  backoffDelay,
  failedBeforeSending,
  isRetrySafe,
  parseRetryAfter,
  resolveRetryOptions,
  sleep,
  type RetryOptions,
} from './retry.ts';

export type FetchFunction = (request: Request) => Promise<Response>;

/** Supplies bearer tokens; `tokenFor` answers undefined for operations without authentication. */
export interface TokenProvider {
  tokenFor(url: URL, method: string): Promise<string | undefined>;
  /** Forget this token (the server said TOKEN_EXPIRED); the next tokenFor fetches a new one. */
  expire(token: string): void;
}

export interface RetryEvent {
  method: string;
  url: string;
  requestId: string;
  /** The attempt that failed (1 = the first). */
  attempt: number;
  delayMs: number;
  /** The HTTP status, or the client-side code of a failure without an answer. */
  reason: number | 'NETWORK_ERROR' | 'TIMEOUT';
}

export interface TransportOptions {
  /** The underlying fetch (default globalThis.fetch). */
  fetch?: FetchFunction;
  /** Timeout of one HTTP attempt, in ms (default 30 000). */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** POST paths that are safe to repeat after a timeout or a dropped connection. */
  safePosts?: readonly RegExp[];
  auth?: TokenProvider;
  /** Called before each wait, e.g. for logging. */
  onRetry?: (event: RetryEvent) => void;
}

export const DEFAULT_TIMEOUT_MS = 30_000;

/** A client-chosen X-Request-Id: "req_" and 32 random hex digits (within the contract's 1–128 safe characters). */
export function newRequestId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `req_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** The server holds an answer at most this long for `Prefer: wait=N` (larger N count as 30). */
const MAX_WAIT_SECONDS = 30;

/** `Prefer: wait=N` makes the server hold the answer up to N s; the timeout leaves room for it. */
function attemptTimeout(prefer: string | null, timeoutMs: number): number {
  const wait = prefer ? /(?:^|[,;\s])wait=(\d+)/i.exec(prefer) : null;
  if (!wait) return timeoutMs;
  return Math.max(timeoutMs, (Math.min(Number(wait[1]), MAX_WAIT_SECONDS) + 5) * 1000);
}

const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 204, 205, 304]);

export function createTransport(options: TransportOptions = {}): FetchFunction {
  const baseFetch: FetchFunction = options.fetch ?? ((request) => globalThis.fetch(request));
  const retry = resolveRetryOptions(options.retry);
  const safePosts = options.safePosts ?? [];
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  return async function send(input: Request): Promise<Response> {
    const url = new URL(input.url);
    const requestId = input.headers.get('x-request-id') ?? newRequestId();
    const safe = isRetrySafe(input.method, url.pathname, safePosts);
    const limitMs = attemptTimeout(input.headers.get('prefer'), timeoutMs);
    // Read the body once so every attempt can send it again.
    const body = input.body === null ? undefined : await input.arrayBuffer();
    let renewedToken = false;
    let attempt = 1;

    const waitAndRetry = async (reason: RetryEvent['reason'], delayMs: number): Promise<void> => {
      options.onRetry?.({ method: input.method, url: input.url, requestId, attempt, delayMs, reason });
      try {
        await sleep(delayMs, input.signal);
      } catch (cause) {
        throw aborted(requestId, attempt, cause);
      }
      attempt += 1;
    };

    for (;;) {
      const headers = new Headers(input.headers);
      headers.set('X-Request-Id', requestId);
      const token = await options.auth?.tokenFor(url, input.method);
      if (token !== undefined) headers.set('Authorization', `Bearer ${token}`);
      const timeout = AbortSignal.timeout(limitMs);
      const request = new Request(url, {
        method: input.method,
        headers,
        body,
        signal: AbortSignal.any([input.signal, timeout]),
        redirect: input.redirect,
      });

      let response: Response;
      let text: string;
      try {
        response = await baseFetch(request);
        // Reading the body inside the attempt puts it under the same timeout.
        text = await response.text();
      } catch (cause) {
        if (input.signal.aborted) throw aborted(requestId, attempt, cause);
        const code = timeout.aborted ? 'TIMEOUT' : 'NETWORK_ERROR';
        const retryable = safe || (code === 'NETWORK_ERROR' && failedBeforeSending(cause));
        if (retryable && attempt < retry.maxAttempts) {
          await waitAndRetry(code, backoffDelay(attempt, retry));
          continue;
        }
        throw new ApiClientError({
          status: 0,
          code,
          message:
            code === 'TIMEOUT'
              ? `No answer within ${limitMs} ms: ${input.method} ${url.pathname}`
              : `Network failure: ${input.method} ${url.pathname}`,
          requestId,
          attempts: attempt,
          cause,
        });
      }

      if (response.ok) {
        return new Response(NULL_BODY_STATUSES.has(response.status) ? null : text, {
          status: response.status,
          statusText: response.statusText,
          headers: response.headers,
        });
      }

      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
      const error = errorFromResponse(response, text, requestId, { retryAfterMs, attempts: attempt });
      if (response.status === 401 && error.code === 'TOKEN_EXPIRED' && token !== undefined && !renewedToken) {
        // Once per call: the server refused at authentication, so replaying cannot duplicate work.
        options.auth?.expire(token);
        renewedToken = true;
        continue;
      }
      const retryable = RETRYABLE_STATUSES.has(response.status) || (safe && RETRYABLE_IF_SAFE_STATUSES.has(response.status));
      if (retryable && attempt < retry.maxAttempts) {
        if (retryAfterMs === undefined || retryAfterMs <= retry.maxRetryAfterMs) {
          await waitAndRetry(response.status, retryAfterMs ?? backoffDelay(attempt, retry));
          continue;
        }
      }
      throw error;
    }
  };
}

function aborted(requestId: string, attempts: number, cause: unknown): ApiClientError {
  return new ApiClientError({
    status: 0,
    code: 'ABORTED',
    message: 'The request was aborted by the caller.',
    requestId,
    attempts,
    cause,
  });
}

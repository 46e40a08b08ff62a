/** When and how long to wait before trying a request again. */

export interface RetryOptions {
  /** Total HTTP attempts, the first included (default 4). 1 disables retries. */
  maxAttempts?: number;
  /** First backoff step in ms (default 500); step n is base * 2^(n-1), capped. */
  baseDelayMs?: number;
  /** Cap of one backoff step in ms (default 20 000). */
  maxDelayMs?: number;
  /** A Retry-After longer than this (ms, default 60 000) is not waited for: the error surfaces. */
  maxRetryAfterMs?: number;
}

export type ResolvedRetryOptions = Required<RetryOptions>;

export function resolveRetryOptions(options: RetryOptions = {}): ResolvedRetryOptions {
  return {
    maxAttempts: Math.max(1, Math.floor(options.maxAttempts ?? 4)),
    baseDelayMs: options.baseDelayMs ?? 500,
    maxDelayMs: options.maxDelayMs ?? 20_000,
    maxRetryAfterMs: options.maxRetryAfterMs ?? 60_000,
  };
}

/** Statuses that mean "not processed, try again later" (the contract's RATE_LIMITED and SERVICE_UNAVAILABLE): retried for every operation. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** Server and gateway failures after which the work may or may not have been done: retried only when repeating is safe. */
export const RETRYABLE_IF_SAFE_STATUSES: ReadonlySet<number> = new Set([500, 502, 504]);

/** Exponential backoff with full jitter: a uniform draw in [0, min(cap, base * 2^(attempt-1))]. */
export function backoffDelay(attempt: number, options: ResolvedRetryOptions, random = Math.random): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}

/** Retry-After in ms: delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Methods that may be repeated without changing the result (RFC 9110 §9.2.2). */
const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/**
 * Whether a request may be sent again after it may have reached the server (a timeout or a
 * dropped connection): idempotent methods, plus the POST paths the caller names as safe.
 */
export function isRetrySafe(method: string, pathname: string, safePosts: readonly RegExp[]): boolean {
  if (IDEMPOTENT_METHODS.has(method.toUpperCase())) return true;
  return method.toUpperCase() === 'POST' && safePosts.some((pattern) => pattern.test(pathname));
}

/** Connection errors raised before any byte of the request was sent: retrying cannot duplicate work. */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

export function failedBeforeSending(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_SENT_CODES.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

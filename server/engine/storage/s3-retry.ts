import { setTimeout as sleep } from 'node:timers/promises';
import { ObjectNotFoundError, StorageError, StorageFullError, StorageUnavailableError } from './errors.ts';

/**
 * How long an object store may take. A hung store (a frozen gateway, a dead keep-alive socket)
 * shows as a socket idle for `idleTimeoutMs`; that attempt fails and, while the operation is
 * younger than `retryWindowMs`, one more starts. With the defaults a frozen store fails an
 * operation after about two idle timeouts (under a minute), and refused connections, 5xx and
 * throttling are retried with full-jitter backoff for up to `attempts` tries.
 */
export interface S3Limits {
  /** TCP (and TLS) connection set-up. */
  connectTimeoutMs: number;
  /** No byte sent or received for this long fails the attempt. */
  idleTimeoutMs: number;
  /** An attempt may take at most this long plus its bytes at `minBytesPerSecond` (a trickling store). */
  attemptBaseMs: number;
  minBytesPerSecond: number;
  attempts: number;
  /** No new attempt starts once the operation has run this long. */
  retryWindowMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_S3_LIMITS: S3Limits = {
  connectTimeoutMs: 5_000,
  idleTimeoutMs: 20_000,
  attemptBaseMs: 60_000,
  minBytesPerSecond: 256 * 1024,
  attempts: 10,
  retryWindowMs: 30_000,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
};

/**
 * The longest an operation moving `bytes` can take against a store that accepts connections and
 * then never answers: attempts start until the window closes, each ends after one idle timeout
 * (the SDK arms idle timers of 6 s and more 3 s after the request starts).
 */
export function frozenStoreBoundMs(limits: S3Limits): number {
  const perAttempt = limits.idleTimeoutMs + (limits.idleTimeoutMs >= 6_000 ? 3_000 : 0);
  let elapsed = perAttempt;
  for (let n = 1; n < limits.attempts; n++) {
    if (elapsed >= limits.retryWindowMs) break;
    elapsed += Math.min(limits.maxDelayMs, limits.baseDelayMs * 2 ** (n - 1)) + perAttempt;
  }
  return elapsed;
}

/** What an SDK error means for the backend. */
type Verdict =
  | { kind: 'not-found' }
  | { kind: 'precondition-failed' }
  | { kind: 'range' }
  | { kind: 'full'; reason: string }
  | { kind: 'unavailable'; reason: string; retry: boolean }
  | { kind: 'unexpected'; reason: string };

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ERR_STREAM_PREMATURE_CLOSE',
]);
const CREDENTIAL_ERRORS = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidToken',
  'ExpiredToken',
  'TokenRefreshRequired',
  'AccountProblem',
  'AllAccessDisabled',
  'RequestTimeTooSkewed',
]);
/** Answers a retry may cure: throttling, a body damaged on the way, a store-side timeout, a lost race. */
const TRANSIENT_ERRORS = new Set(['SlowDown', 'Throttling', 'ThrottlingException', 'RequestTimeout', 'BadDigest', 'XAmzContentSHA256Mismatch', 'ConditionalRequestConflict', 'OperationAborted']);
const FULL_ERRORS = new Set(['QuotaExceeded', 'InsufficientStorage', 'StorageQuotaExceeded']);

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

export function classify(err: unknown): Verdict {
  const e = (err ?? {}) as SdkError;
  const name = e.name ?? '';
  const status = e.$metadata?.httpStatusCode;
  const label = status ? `${name || 'error'} (HTTP ${status})` : name === 'Error' && e.code ? e.code : name || String(err);
  if (name === 'NoSuchBucket') return { kind: 'unavailable', reason: 'the bucket does not exist', retry: false };
  if (status === 404 && (name === 'NoSuchKey' || name === 'NotFound')) return { kind: 'not-found' };
  if (status === 412 || name === 'PreconditionFailed') return { kind: 'precondition-failed' };
  if (status === 416 || name === 'InvalidRange') return { kind: 'range' };
  if (FULL_ERRORS.has(name) || status === 507) return { kind: 'full', reason: label };
  if (name === 'CredentialsProviderError') return { kind: 'unavailable', reason: 'no credentials are configured (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or a role)', retry: false };
  if (CREDENTIAL_ERRORS.has(name) || status === 401 || status === 403) {
    return { kind: 'unavailable', reason: `the store refused the credentials: ${label}`, retry: false };
  }
  if (TRANSIENT_ERRORS.has(name) || status === 429 || (status !== undefined && status >= 500)) {
    return { kind: 'unavailable', reason: `the store answered ${label}`, retry: true };
  }
  // Before the name: the SDK calls a reset connection a TimeoutError too.
  if (e.code && NETWORK_CODES.has(e.code)) return { kind: 'unavailable', reason: `the store cannot be reached: ${e.code}`, retry: true };
  if (name === 'TimeoutError' || name === 'AbortError') return { kind: 'unavailable', reason: 'the store did not answer in time', retry: true };
  return { kind: 'unexpected', reason: `${label}: ${e.message ?? ''}`.trim() };
}

/** The backend's own error for a verdict that ends the operation. */
export function storageErrorOf(verdict: Verdict, err: unknown, what: string, name: string): Error {
  switch (verdict.kind) {
    case 'not-found':
      return new ObjectNotFoundError(name, { cause: err });
    case 'range':
      return new RangeError(`${what} ${name}: the range lies past the end of the object`);
    case 'full':
      return new StorageFullError(`${what} ${name}: the object store is full or over quota (${verdict.reason})`, { cause: err });
    case 'unavailable':
      return new StorageUnavailableError(`${what} ${name}: ${verdict.reason}`, { cause: err });
    case 'precondition-failed':
    case 'unexpected':
      return new StorageError(`${what} ${name}: ${verdict.kind === 'unexpected' ? verdict.reason : 'precondition failed'}`, { cause: err });
  }
}

/**
 * Runs one store request with retries: full-jitter exponential backoff on what a retry may cure,
 * each attempt under its own deadline (`bytes` moved at the slowest acceptable rate), and no new
 * attempt once the retry window has passed. Returns the result or the final verdict's error;
 * `accept` may turn a verdict into a result (a 412 on a conditional write).
 */
export async function withRetries<T>(
  limits: S3Limits,
  what: string,
  name: string,
  bytes: number,
  attempt: (signal: AbortSignal) => Promise<T>,
  accept?: (verdict: Verdict) => { value: T } | undefined,
): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    const signal = AbortSignal.timeout(limits.attemptBaseMs + Math.ceil((bytes / limits.minBytesPerSecond) * 1000));
    try {
      return await attempt(signal);
    } catch (err) {
      const verdict = classify(err);
      const accepted = accept?.(verdict);
      if (accepted) return accepted.value;
      const delay = Math.random() * Math.min(limits.maxDelayMs, limits.baseDelayMs * 2 ** (n - 1));
      const retry = verdict.kind === 'unavailable' && verdict.retry && n < limits.attempts && Date.now() + delay - started < limits.retryWindowMs;
      if (!retry) throw storageErrorOf(verdict, err, what, name);
      await sleep(delay);
    }
  }
}

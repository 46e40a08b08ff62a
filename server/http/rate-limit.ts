/**
 * Rate-limit middleware: counts each request of a limited operation against a key (the account
 * for the Backup API, the client address for the public tools and POST /auth/token), sets the
 * X-RateLimit-* headers (and the IETF draft RateLimit-Policy / RateLimit) on every response,
 * and refuses with 429 RATE_LIMITED + Retry-After once the window's limit is used up.
 *
 * The error handler must keep headers already set on the response and add ApiError.headers.
 */
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { RateLimitStoreUnavailableError, windowEnd, type RateLimitState, type RateLimitStore } from '../ratelimit/store.ts';
import { ApiError } from './errors.ts';

export interface RateLimitOptions {
  store: RateLimitStore;
  /** Names the limit: namespaces the store keys and the IETF policy (e.g. "tools-ip-info"). */
  name: string;
  /** The key to count against; called after earlier middleware (auth) has run. */
  key: (req: Request, res: Response) => string;
  /** Requests per window, fixed or per request (e.g. by the account's plan). */
  limit: number | ((req: Request, res: Response) => number);
  windowMs: number;
  /** Also send the IETF draft RateLimit-Policy / RateLimit headers (default true). */
  draftHeaders?: boolean;
}

/** What the binding limit of this request was; read by later limiters of the same request. */
interface AppliedLimit {
  name: string;
  windowMs: number;
  state: RateLimitState;
}

const APPLIED = Symbol('rateLimitApplied');
type LimitedResponse = Response & { [APPLIED]?: AppliedLimit };

/** Seconds from the store's now until the window resets; at least 1. */
export function secondsUntilReset(state: RateLimitState): number {
  return Math.max(1, Math.ceil((state.resetAt - state.now) / 1000));
}

function setHeaders(res: Response, applied: AppliedLimit, draftHeaders: boolean): void {
  const { name, windowMs, state } = applied;
  res.setHeader('X-RateLimit-Limit', String(state.limit));
  res.setHeader('X-RateLimit-Remaining', String(state.remaining));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil(state.resetAt / 1000)));
  if (draftHeaders) {
    res.setHeader('RateLimit-Policy', `"${name}";q=${state.limit};w=${Math.round(windowMs / 1000)}`);
    res.setHeader('RateLimit', `"${name}";r=${state.remaining};t=${secondsUntilReset(state)}`);
  }
  (res as LimitedResponse)[APPLIED] = applied;
}

/** Headers describe the limit with the fewest requests left, as the contract says. */
function applyIfBinding(res: Response, applied: AppliedLimit, draftHeaders: boolean): void {
  const previous = (res as LimitedResponse)[APPLIED];
  if (!previous || applied.state.remaining < previous.state.remaining || !applied.state.allowed) {
    setHeaders(res, applied, draftHeaders);
  }
}

/** The name of the limit the response's rate-limit headers describe: on a 429, the one that refused it. */
export function bindingLimit(res: Response): string | undefined {
  return (res as LimitedResponse)[APPLIED]?.name;
}

function rateLimited(state: RateLimitState, windowMs: number): ApiError {
  const retryAfter = secondsUntilReset(state);
  return new ApiError(
    'RATE_LIMITED',
    `Rate limit of ${state.limit} requests per ${Math.round(windowMs / 1000)} seconds exceeded. Retry after ${retryAfter} seconds.`,
    {},
    { 'Retry-After': String(retryAfter) },
  );
}

/** Seconds a client is asked to wait while the shared rate-limit store cannot be reached. */
const STORE_RETRY_AFTER_S = 5;

/**
 * Counts a hit; when the store cannot be reached, answers 503 SERVICE_UNAVAILABLE instead of
 * serving unlimited, with the headers every limited answer carries: the limit, nothing
 * remaining for now, the end of the current window (clock-aligned, so known without the store).
 */
async function hitOr503(store: RateLimitStore, res: Response, key: string, limit: number, windowMs: number): Promise<RateLimitState> {
  try {
    return await store.hit(key, limit, windowMs);
  } catch (err) {
    if (!(err instanceof RateLimitStoreUnavailableError)) throw err;
    res.setHeader('X-RateLimit-Limit', String(limit));
    res.setHeader('X-RateLimit-Remaining', '0');
    res.setHeader('X-RateLimit-Reset', String(Math.ceil(windowEnd(Date.now(), windowMs) / 1000)));
    throw new ApiError('SERVICE_UNAVAILABLE', 'Rate limits cannot be checked right now; retry shortly.', {}, { 'Retry-After': String(STORE_RETRY_AFTER_S) });
  }
}

/** Express middleware enforcing one limit. */
export function rateLimit(options: RateLimitOptions): RequestHandler {
  const { store, name, windowMs } = options;
  const draftHeaders = options.draftHeaders ?? true;
  const decide = (res: Response, state: RateLimitState, next: NextFunction): void => {
    applyIfBinding(res, { name, windowMs, state }, draftHeaders);
    if (!state.allowed) throw rateLimited(state, windowMs);
    next();
  };
  return (req, res, next) => {
    const limit = typeof options.limit === 'function' ? options.limit(req, res) : options.limit;
    const key = `${name}:${options.key(req, res)}`;
    // An in-process store decides within the call, so the request goes on without a promise.
    if (store.hitNow) return decide(res, store.hitNow(key, limit, windowMs), next);
    return hitOr503(store, res, key, limit, windowMs).then((state) => decide(res, state, next));
  };
}

export interface FailureLimitOptions {
  store: RateLimitStore;
  name: string;
  key: (req: Request, res: Response) => string;
  /** Failures allowed per window (the contract: `failed_limit` of POST /auth/token's x-rate-limit). */
  limit: number;
  windowMs: number;
  /** Whether a finished login response counts as a failure (default: status 401). */
  isFailure?: (res: Response) => boolean;
  draftHeaders?: boolean;
}

export interface FailureLimit {
  /**
   * Middleware for the login operation (POST /auth/token), after its request limit. Each
   * attempt takes a slot before the credentials are checked and gives it back when the answer
   * is not a failure, so parallel attempts cannot check more than `limit` credentials per
   * window. Once `limit` failures are counted, every attempt from the key answers 429, good
   * credentials included, until the window ends. A success does not clear earlier failures.
   */
  guard: RequestHandler;
  /**
   * Error middleware, mounted after the routes and before the error handler: a 401 ApiError of
   * any other operation (no valid token) counts as one failure, and the rate-limit headers then
   * describe the failure limit. The answer stays 401.
   */
  countErrors: ErrorRequestHandler;
  /** Counts one failure for the request's key and sets the headers (what countErrors does). */
  record(req: Request, res: Response): Promise<void>;
}

const GUARDED = Symbol('failureGuarded');
type GuardedResponse = Response & { [GUARDED]?: true };

/** The harder limit on failed authentication per client address. */
export function failureLimit(options: FailureLimitOptions): FailureLimit {
  const { store, name, limit, windowMs } = options;
  const isFailure = options.isFailure ?? ((res: Response) => res.statusCode === 401);
  const draftHeaders = options.draftHeaders ?? true;
  const keyOf = (req: Request, res: Response) => `${name}:${options.key(req, res)}`;

  const guard: RequestHandler = async (req, res, next) => {
    const key = keyOf(req, res);
    const state = await hitOr503(store, res, key, limit, windowMs);
    applyIfBinding(res, { name, windowMs, state }, draftHeaders);
    if (!state.allowed) throw rateLimited(state, windowMs);
    (res as GuardedResponse)[GUARDED] = true;
    // A response that never finished (client gone) stays counted, and so does one whose refund
    // the store cannot take (unreachable): counting too much is the safe side.
    res.once('finish', () => {
      if (!isFailure(res)) store.refund(key, state.resetAt).catch(() => {});
    });
    next();
  };

  const record = async (req: Request, res: Response): Promise<void> => {
    const state = await hitOr503(store, res, keyOf(req, res), limit, windowMs);
    applyIfBinding(res, { name, windowMs, state }, draftHeaders);
  };

  const countErrors: ErrorRequestHandler = async (err, req, res, next) => {
    if (err instanceof ApiError && err.status === 401 && !(res as GuardedResponse)[GUARDED] && !res.headersSent) {
      await record(req, res);
    }
    next(err);
  };

  return { guard, countErrors, record };
}

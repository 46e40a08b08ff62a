/**
 * Rate-limit counters: fixed windows per key. The interface is asynchronous so that a shared
 * store (Redis, redis.ts: one script per hit) can serve several server instances; the
 * in-process store is the default. Both pass the same suite (suite.ts).
 *
 * Windows are aligned to the clock, as the contract documents: a one-hour window runs from the
 * full hour to the next (epoch milliseconds divisible by `windowMs`), so X-RateLimit-Reset is
 * predictable and a shared store can name a window by its start.
 */

export interface RateLimitState {
  /** True when this hit was counted (the limit was not yet reached). */
  allowed: boolean;
  limit: number;
  /** Hits left in the current window after this one. */
  remaining: number;
  /** Epoch milliseconds at which the current window ends. */
  resetAt: number;
  /** Epoch milliseconds the store judged the hit at (its clock). */
  now: number;
}

export interface RateLimitStore {
  /**
   * Atomically: count one hit for `key` if fewer than `limit` were counted in its current
   * window, and report the state. A refused hit is not counted.
   */
  hit(key: string, limit: number, windowMs: number): Promise<RateLimitState>;
  /** What `hit` does, answered at once: only a store that decides within the call (in-process) has it. */
  hitNow?(key: string, limit: number, windowMs: number): RateLimitState;
  /**
   * Take back one hit counted in the window that ends at `resetAt` (no effect once that
   * window is over). Used to count only the outcomes that matter, e.g. failed logins.
   */
  refund(key: string, resetAt: number): Promise<void>;
  /** Forget a key. */
  reset(key: string): Promise<void>;
  /** Releases connections, if the store holds any. */
  close?(): Promise<void>;
  /** A shared store's reachability, checked by /status (rejects when it cannot be reached). */
  ping?(): Promise<void>;
}

/**
 * A shared store that cannot be reached: every operation throws this, at once, and the HTTP
 * layer answers 503 SERVICE_UNAVAILABLE with Retry-After. Never thrown by the memory store.
 */
export class RateLimitStoreUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RateLimitStoreUnavailableError';
  }
}

/** The end of the clock-aligned window of length `windowMs` that contains `now`. */
export function windowEnd(now: number, windowMs: number): number {
  return (Math.floor(now / windowMs) + 1) * windowMs;
}

interface Window {
  count: number;
  resetAt: number;
}

export interface MemoryStoreOptions {
  /** Clock in epoch milliseconds; injectable for tests. */
  now?: () => number;
  /** How often, at most, expired windows are swept (default one minute). */
  sweepIntervalMs?: number;
}

/**
 * The in-process store. Every operation runs to completion synchronously (no await between
 * reading and writing a counter), so concurrent requests cannot both take the last slot.
 * Memory holds only live windows: expired ones are swept, lazily, during hits.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #windows = new Map<string, Window>();
  readonly #now: () => number;
  readonly #sweepIntervalMs: number;
  #nextSweep: number;

  constructor(options: MemoryStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#sweepIntervalMs = options.sweepIntervalMs ?? 60_000;
    this.#nextSweep = this.#now() + this.#sweepIntervalMs;
  }

  /** Number of keys held (live windows, plus expired ones not yet swept). */
  get size(): number {
    return this.#windows.size;
  }

  hit(key: string, limit: number, windowMs: number): Promise<RateLimitState> {
    return Promise.resolve(this.hitNow(key, limit, windowMs));
  }

  hitNow(key: string, limit: number, windowMs: number): RateLimitState {
    const now = this.#now();
    if (now >= this.#nextSweep) this.sweep(now);
    let window = this.#windows.get(key);
    if (!window || window.resetAt <= now) {
      window = { count: 0, resetAt: windowEnd(now, windowMs) };
      this.#windows.set(key, window);
    }
    const allowed = window.count < limit;
    if (allowed) window.count++;
    return { allowed, limit, remaining: Math.max(0, limit - window.count), resetAt: window.resetAt, now };
  }

  refund(key: string, resetAt: number): Promise<void> {
    const window = this.#windows.get(key);
    if (window && window.resetAt === resetAt && window.resetAt > this.#now() && window.count > 0) {
      window.count--;
    }
    return Promise.resolve();
  }

  reset(key: string): Promise<void> {
    this.#windows.delete(key);
    return Promise.resolve();
  }

  /** Drop every expired window. */
  sweep(now = this.#now()): void {
    for (const [key, window] of this.#windows) {
      if (window.resetAt <= now) this.#windows.delete(key);
    }
    this.#nextSweep = now + this.#sweepIntervalMs;
  }
}

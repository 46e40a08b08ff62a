/**
 * The mock's rate limits, from each operation's x-rate-limit in the operation table: fixed windows
 * aligned to the clock, as the server counts them, so the headers of the mock and of the server
 * agree: Remaining counts down, Reset is the window's end in epoch seconds, and a 429 carries
 * Remaining 0 and Retry-After = the seconds left until Reset.
 */

export interface LimitState {
  /** Names the counter (e.g. "account", "tools-checkSite"). */
  name: string;
  limit: number;
  windowMs: number;
  remaining: number;
  /** Epoch ms at which the window ends. */
  resetAt: number;
  now: number;
  allowed: boolean;
}

interface Window {
  count: number;
  resetAt: number;
}

export class Counters {
  readonly #windows = new Map<string, Window>();

  #window(key: string, windowMs: number, now: number): Window {
    let w = this.#windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: (Math.floor(now / windowMs) + 1) * windowMs };
      this.#windows.set(key, w);
    }
    return w;
  }

  /** Counts one request if the window has room. */
  hit(name: string, key: string, limit: number, windowMs: number, now = Date.now()): LimitState {
    const w = this.#window(`${name}:${key}`, windowMs, now);
    const allowed = w.count < limit;
    if (allowed) w.count++;
    return { name, limit, windowMs, remaining: Math.max(0, limit - w.count), resetAt: w.resetAt, now, allowed };
  }

  /** The state without counting (for answers forced with Prefer). */
  peek(name: string, key: string, limit: number, windowMs: number, now = Date.now()): LimitState {
    const w = this.#window(`${name}:${key}`, windowMs, now);
    return { name, limit, windowMs, remaining: Math.max(0, limit - w.count), resetAt: w.resetAt, now, allowed: w.count < limit };
  }

  /** Takes back one request of the window that ends at resetAt. */
  refund(name: string, key: string, resetAt: number): void {
    const w = this.#windows.get(`${name}:${key}`);
    if (w && w.resetAt === resetAt && w.count > 0) w.count--;
  }

  clear(): void {
    this.#windows.clear();
  }
}

/** Of several limits that apply, the headers describe the one with the fewest requests left (a refused one first). */
export function binding(states: LimitState[]): LimitState | undefined {
  return [...states].sort((a, b) => Number(a.allowed) - Number(b.allowed) || a.remaining - b.remaining)[0];
}

export const secondsUntilReset = (s: LimitState): number => Math.max(1, Math.ceil((s.resetAt - s.now) / 1000));

export function limitHeaders(state: LimitState): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(state.limit),
    'X-RateLimit-Remaining': String(state.allowed ? state.remaining : 0),
    'X-RateLimit-Reset': String(Math.ceil(state.resetAt / 1000)),
  };
}

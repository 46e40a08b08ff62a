/**
 * The shared rate-limit store: counters in Redis, so that a limit holds across every server
 * instance exactly as it does in one. Each hit (and each refund) is one Lua script, run
 * atomically by Redis: read the key's window, start a new one when the clock has passed it,
 * count the hit if the limit allows. Windows are aligned to the clock as in the memory store,
 * on Redis's clock (TIME), so instances with skewed clocks still agree on the window.
 *
 * One key per limit key, a hash {reset_at, count} that expires when its window ends.
 *
 * When Redis cannot be reached the operations fail at once (no queueing, 1 s command timeout)
 * with RateLimitStoreUnavailableError, which the HTTP layer answers 503 with Retry-After; the
 * client keeps reconnecting, so service resumes by itself once Redis is back.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RateLimitStoreUnavailableError, type RateLimitState, type RateLimitStore } from './store.ts';

/** Epoch milliseconds on Redis's clock. */
const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** KEYS[1] the counter; ARGV limit, window length (ms). Returns {allowed, count, reset_at, now}. */
const HIT = `${NOW}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local reset_at = (math.floor(now / window) + 1) * window
local stored = redis.call('HMGET', KEYS[1], 'reset_at', 'count')
local count = 0
if tonumber(stored[1]) == reset_at then count = tonumber(stored[2]) end
local allowed = 0
if count < limit then
  allowed = 1
  count = count + 1
  redis.call('HSET', KEYS[1], 'reset_at', string.format('%d', reset_at), 'count', count)
  redis.call('PEXPIREAT', KEYS[1], string.format('%d', reset_at))
end
return {allowed, count, reset_at, now}
`;

/** KEYS[1] the counter; ARGV reset_at of the window the hit was counted in. */
const REFUND = `${NOW}
local reset_at = tonumber(ARGV[1])
local stored = redis.call('HMGET', KEYS[1], 'reset_at', 'count')
if tonumber(stored[1]) == reset_at and reset_at > now and tonumber(stored[2]) > 0 then
  redis.call('HINCRBY', KEYS[1], 'count', -1)
end
return 0
`;

type Scripted = Redis & {
  rateLimitHit(key: string, limit: number, windowMs: number): Promise<[number, number, number, number]>;
  rateLimitRefund(key: string, resetAt: number): Promise<number>;
};

export interface RedisStoreOptions {
  /** Prefix of every key (default `ratelimit:`), so the limits can share a Redis with other data. */
  prefix?: string;
  /** Where connection trouble is logged (once per outage). */
  logger?: Logger;
  /** How long one command may take before it counts as a failure (default 1000 ms). */
  commandTimeoutMs?: number;
}

export class RedisRateLimitStore implements RateLimitStore {
  readonly #client: Scripted;
  readonly #prefix: string;
  #down = false;

  constructor(url: string, options: RedisStoreOptions = {}) {
    const { logger, commandTimeoutMs = 1000 } = options;
    this.#prefix = options.prefix ?? 'ratelimit:';
    const client = new Redis(url, {
      // Fail at once while disconnected (the request answers 503) instead of queueing it.
      enableOfflineQueue: false,
      // A command whose connection dropped is not sent again: a hit is not idempotent.
      maxRetriesPerRequest: 0,
      commandTimeout: commandTimeoutMs,
      connectTimeout: commandTimeoutMs,
      // Keep trying for ever, at most a second apart, so recovery needs no restart.
      retryStrategy: (times) => Math.min(times * 100, 1000),
    });
    client.defineCommand('rateLimitHit', { numberOfKeys: 1, lua: HIT });
    client.defineCommand('rateLimitRefund', { numberOfKeys: 1, lua: REFUND });
    client.on('error', (err: Error) => {
      if (this.#down) return;
      this.#down = true;
      logger?.error({ err: err.message }, 'rate-limit store (Redis) unreachable; limited operations answer 503 until it is back');
    });
    client.on('ready', () => {
      if (!this.#down) return;
      this.#down = false;
      logger?.info('rate-limit store (Redis) reachable again');
    });
    this.#client = client as Scripted;
  }

  /** Resolves once connected, or after `timeoutMs` (requests then answer 503 until it is). */
  async ready(timeoutMs = 2000): Promise<boolean> {
    if (this.#client.status === 'ready') return true;
    let timer: NodeJS.Timeout | undefined;
    const ok = await Promise.race([
      new Promise<boolean>((resolve) => this.#client.once('ready', () => resolve(true))),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    return ok;
  }

  async #call<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      throw new RateLimitStoreUnavailableError('The rate-limit store (Redis) cannot be reached.', { cause: err });
    }
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateLimitState> {
    const [allowed, count, resetAt, now] = await this.#call(() => this.#client.rateLimitHit(this.#prefix + key, limit, windowMs));
    return { allowed: allowed === 1, limit, remaining: Math.max(0, limit - count), resetAt, now };
  }

  async refund(key: string, resetAt: number): Promise<void> {
    await this.#call(() => this.#client.rateLimitRefund(this.#prefix + key, resetAt));
  }

  async reset(key: string): Promise<void> {
    await this.#call(() => this.#client.del(this.#prefix + key));
  }

  /** One round trip to Redis (for health checks); throws RateLimitStoreUnavailableError. */
  async ping(): Promise<void> {
    await this.#call(() => this.#client.ping());
  }

  async close(): Promise<void> {
    this.#client.disconnect();
  }
}

/**
 * Which rate-limit store the configuration selects: REDIS_URL set → Redis, shared by every
 * instance that is given the same URL; unset → counters in this process (one instance).
 */
import type { Logger } from 'pino';
import { MemoryRateLimitStore, type RateLimitStore } from './store.ts';

/** The URL without its password, for messages and logs. */
export function redactedUrl(url: URL): string {
  const copy = new URL(url.href);
  if (copy.password) copy.password = '***';
  return copy.href;
}

/**
 * REDIS_URL: unset or empty = in-process counters; otherwise `redis://[user:password@]host[:port][/db]`
 * (or `rediss://` for TLS). Throws a message naming the variable on anything else.
 */
export function parseRedisUrl(raw: string | undefined): string | undefined {
  const value = raw?.trim();
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error('REDIS_URL is not a URL; expected redis://host:port (or rediss:// for TLS)');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new Error(`REDIS_URL must start with redis:// or rediss://, got "${redactedUrl(url)}"`);
  }
  if (!url.hostname) throw new Error(`REDIS_URL names no host: "${redactedUrl(url)}"`);
  if (url.pathname.length > 1 && !/^\/\d+$/.test(url.pathname)) {
    throw new Error(`REDIS_URL's path must be a database number (e.g. /0), got "${redactedUrl(url)}"`);
  }
  return value;
}

/**
 * Opens the selected store; with Redis, waits briefly for the connection (it keeps trying after).
 * The Redis client is loaded only then: the in-process default never pays for it.
 */
export async function openRateLimitStore(redisUrl: string | undefined, logger: Logger): Promise<RateLimitStore> {
  if (!redisUrl) return new MemoryRateLimitStore();
  const { RedisRateLimitStore } = await import('./redis.ts');
  const store = new RedisRateLimitStore(redisUrl, { logger });
  const where = redactedUrl(new URL(redisUrl));
  if (await store.ready()) logger.info({ redis: where }, 'rate limits are counted in Redis');
  else logger.warn({ redis: where }, 'Redis is not reachable yet; limited operations answer 503 until it is');
  return store;
}

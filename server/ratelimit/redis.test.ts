import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../testing/services/redis.ts';
import { RedisRateLimitStore } from './redis.ts';
import { RateLimitStoreUnavailableError, windowEnd } from './store.ts';
import { rateLimitStoreSuite } from './suite.ts';

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.cleanup();
});

rateLimitStoreSuite('redis', async () => {
  const store = new RedisRateLimitStore(redis.url);
  await store.ready();
  return { store, cleanup: () => store.close() };
});

describe('RedisRateLimitStore across instances and outages', () => {
  it('holds a limit across two instances: 150 parallel hits, 100 allowed', async () => {
    const a = new RedisRateLimitStore(redis.url);
    const b = new RedisRateLimitStore(redis.url);
    try {
      await Promise.all([a.ready(), b.ready()]);
      if (windowEnd(Date.now(), 60_000) - Date.now() < 5000) await sleep(5000);
      const states = await Promise.all(Array.from({ length: 150 }, (_, i) => (i % 2 ? a : b).hit('two-instances', 100, 60_000)));
      expect(states.filter((s) => s.allowed)).toHaveLength(100);
      expect(new Set(states.filter((s) => s.allowed).map((s) => s.remaining)).size).toBe(100);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('lets a window expire in Redis when it ends, so nothing piles up', async () => {
    const store = new RedisRateLimitStore(redis.url, { prefix: 'expiry:' });
    const raw = new Redis(redis.url);
    try {
      await store.ready();
      const state = await store.hit('k', 5, 60_000);
      const pexpireAt = await raw.pexpiretime('expiry:k');
      expect(pexpireAt).toBe(state.resetAt);
    } finally {
      raw.disconnect();
      await store.close();
    }
  });

  it('fails fast while Redis is down and recovers by itself once it is back', async () => {
    const store = new RedisRateLimitStore(redis.url);
    try {
      await store.ready();
      expect((await store.hit('outage', 10, 60_000)).allowed).toBe(true);
      await redis.stop();
      const started = Date.now();
      await expect(store.hit('outage', 10, 60_000)).rejects.toBeInstanceOf(RateLimitStoreUnavailableError);
      await expect(store.refund('outage', Date.now() + 1000)).rejects.toBeInstanceOf(RateLimitStoreUnavailableError);
      await expect(store.ping()).rejects.toBeInstanceOf(RateLimitStoreUnavailableError);
      expect(Date.now() - started).toBeLessThan(3500);
      await redis.start();
      let recovered = false;
      for (let i = 0; i < 50 && !recovered; i++) {
        recovered = await store.hit('after', 10, 60_000).then(() => true, () => false);
        if (!recovered) await sleep(100);
      }
      expect(recovered).toBe(true);
      await store.ping();
    } finally {
      await store.close();
    }
  });
});

import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { windowEnd } from '../ratelimit/store.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { startRedis, type RedisServer } from '../testing/services/redis.ts';

describe('rate limits in Redis (REDIS_URL) over real HTTP', () => {
  let redis: RedisServer;
  let a: Harness;
  let b: Harness;
  beforeAll(async () => {
    redis = await startRedis();
    // Two servers given the same REDIS_URL, as two instances would be.
    a = await startHarness({ REDIS_URL: redis.url });
    b = await startHarness({ REDIS_URL: redis.url });
  });
  afterAll(async () => {
    await a?.cleanup();
    await b?.cleanup();
    await redis?.cleanup();
  });

  const contact = (h: Harness) => h.request('/api/contacts/general', { method: 'POST', json: { name: 'N', email: 'n@example.com', subject: 's', message: 'm' } });

  it('holds one limit across two servers: 5 contact messages per minute per address, in all', async () => {
    const left = windowEnd(Date.now(), 60_000) - Date.now();
    if (left < 3000) await sleep(left + 50);
    const statuses = [];
    for (let i = 0; i < 8; i++) statuses.push((await contact(i % 2 ? a : b)).status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
  });

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After while Redis is down, and recovers without a restart', async () => {
    const token = await a.tokenFor(await a.newKey());
    expect((await a.request('/api/v1/backup', { token })).status).toBe(200);
    await redis.stop();
    try {
      const down = await a.request('/api/v1/backup', { token });
      expect(down.status).toBe(503);
      expect(down.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(Number(down.headers.get('retry-after'))).toBeGreaterThan(0);
      // The headers of every limited answer: the plan's limit, nothing left for now, the window's end.
      expect(down.headers.get('x-ratelimit-limit')).toBe('10000');
      expect(down.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(down.headers.get('x-ratelimit-reset')) % 3600).toBe(0);
      expect((await a.request('/api/tools/ip-info')).status).toBe(503);
      // Not limited, so not affected: the health probe still answers.
      expect((await a.request('/api/v1/status')).status).toBe(200);
    } finally {
      await redis.start();
    }
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await a.request('/api/v1/backup', { token })).status;
      if (status !== 200) await sleep(100);
    }
    expect(status).toBe(200);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusWithin } from '../testing/eventually.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { startRedis, type RedisServer } from '../testing/services/redis.ts';

describe('readiness with the rate limits in Redis (REDIS_URL)', () => {
  let redis: RedisServer;
  let h: Harness;
  beforeAll(async () => {
    redis = await startRedis();
    h = await startHarness({ REDIS_URL: redis.url });
  });
  afterAll(async () => {
    await h?.cleanup();
    await redis?.cleanup();
  });

  it('checks Redis by name, turns 503 naming it while Redis is stopped, and 200 once it is back', async () => {
    expect(await statusWithin(h, '/readyz', 200)).toBe(200);
    const ready = await h.request('/readyz');
    expect(ready.body.data.checks).toMatchObject({ database: { status: 'ok' }, storage: { status: 'ok' }, redis: { status: 'ok' } });

    await redis.stop();
    try {
      const down = await h.request('/readyz');
      expect(down.status).toBe(503);
      expect(down.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { failing: ['redis'] } });
      expect(down.body.error.message).toContain('redis');
      const status = await h.request('/api/v1/status');
      expect(status.body.data).toMatchObject({ status: 'degraded', checks: { redis: { status: 'failed' }, database: { status: 'ok' } } });
      expect((await h.request('/livez')).status).toBe(200);
    } finally {
      await redis.start();
    }
    expect(await statusWithin(h, '/readyz', 200)).toBe(200);
  });
});

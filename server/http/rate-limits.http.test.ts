import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../testing/harness.ts';

describe('rate limits over real HTTP', () => {
  const open: Harness[] = [];
  afterEach(async () => {
    for (const h of open.splice(0)) await h.cleanup();
  });
  async function harness(env: Record<string, string> = {}) {
    const h = await startHarness(env);
    open.push(h);
    return h;
  }

  it('lets exactly the plan limit through per account, even 130 requests at once, then 429 with headers', async () => {
    const h = await harness();
    const key = await h.newKey('free_trial');
    const token = await h.tokenFor(key);
    const answers = await Promise.all(Array.from({ length: 130 }, () => h.request('/api/v1/backup', { token })));
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    expect(ok).toHaveLength(100);
    expect(limited).toHaveLength(30);
    expect(new Set(ok.map((a) => a.headers.get('x-ratelimit-remaining')))).toEqual(new Set(Array.from({ length: 100 }, (_, i) => String(i))));
    const r = limited[0]!;
    expect(r.body.error.code).toBe('RATE_LIMITED');
    expect(r.headers.get('x-ratelimit-limit')).toBe('100');
    expect(r.headers.get('x-ratelimit-remaining')).toBe('0');
    const reset = Number(r.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThan(Date.now() / 1000);
    expect(reset).toBeLessThanOrEqual(Date.now() / 1000 + 3600 + 1);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);

    // Another account of the same plan has its own budget; /status is never limited.
    const other = await h.tokenFor(await h.newKey('free_trial'));
    expect((await h.request('/api/v1/backup', { token: other })).headers.get('x-ratelimit-remaining')).toBe('99');
    expect((await h.request('/api/v1/status')).status).toBe(200);
  });

  it('applies the plan of the account: pro 1000, business 10000', async () => {
    const h = await harness();
    const pro = await h.tokenFor(await h.newKey('pro'));
    const business = await h.tokenFor(await h.newKey('business'));
    expect((await h.request('/api/v1/backup', { token: pro })).headers.get('x-ratelimit-limit')).toBe('1000');
    expect((await h.request('/api/v1/backup', { token: business })).headers.get('x-ratelimit-limit')).toBe('10000');
  });

  it('limits the tools per client address per minute and ignores a forged X-Forwarded-For', async () => {
    const h = await harness();
    // Windows are clock-aligned minutes: start early in one, so all six requests fall in it.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 10_000) await new Promise((r) => setTimeout(r, left + 50));
    const send = (i: number) =>
      h.request('/api/contacts/general', {
        method: 'POST',
        headers: { 'X-Forwarded-For': `203.0.113.${i}` },
        json: { name: 'N', email: 'n@example.com', subject: 's', message: 'm' },
      });
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await send(i));
    expect(answers.slice(0, 5).map((a) => a.status)).toEqual([201, 201, 201, 201, 201]);
    expect(answers[4]!.headers.get('x-ratelimit-limit')).toBe('5');
    expect(answers[5]!.status).toBe(429);
    expect(answers[5]!.body.error.code).toBe('RATE_LIMITED');
    expect(Number(answers[5]!.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    // Limits are per operation: ip-info still has its 30.
    expect((await h.request('/api/tools/ip-info')).headers.get('x-ratelimit-limit')).toBe('30');
  });

  it('counts each forwarded client separately behind a trusted proxy', async () => {
    const h = await harness({ TRUST_PROXY: 'loopback' });
    const info = await h.request('/api/tools/ip-info', { headers: { 'X-Forwarded-For': '198.51.100.7' } });
    expect(info.body.data).toMatchObject({ ip: '198.51.100.7', version: 4 });
    for (let i = 0; i < 10; i++) {
      const a = await h.request('/api/newsletter/subscribe', { method: 'POST', headers: { 'X-Forwarded-For': '198.51.100.1' }, json: { email: `a${i}@example.com`, source: 't' } });
      expect(a.status).toBe(201);
    }
    const blocked = await h.request('/api/newsletter/subscribe', { method: 'POST', headers: { 'X-Forwarded-For': '198.51.100.1' }, json: { email: 'z@example.com', source: 't' } });
    expect(blocked.status).toBe(429);
    const otherClient = await h.request('/api/newsletter/subscribe', { method: 'POST', headers: { 'X-Forwarded-For': '198.51.100.2' }, json: { email: 'z@example.com', source: 't' } });
    expect(otherClient.status).toBe(201);
  });

  it('limits POST /auth/token to 60 per hour per address', async () => {
    const h = await harness();
    const key = await h.newKey();
    const body = { api_key: key.apiKey, secret: key.secret };
    for (let i = 0; i < 60; i++) {
      const ok = await h.request('/api/v1/auth/token', { method: 'POST', json: body });
      expect(ok.status).toBe(200);
    }
    const over = await h.request('/api/v1/auth/token', { method: 'POST', json: body });
    expect(over.status).toBe(429);
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('RATE_LIMITS=off removes every limit (benchmarks only)', async () => {
    const h = await harness({ RATE_LIMITS: 'off' });
    const res = await h.request('/api/tools/ip-info');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
  });
});

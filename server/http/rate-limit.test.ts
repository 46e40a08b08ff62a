import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { ErrorRequestHandler, Request } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { planLimit } from '../ratelimit/limits.ts';
import { MemoryRateLimitStore, type RateLimitStore } from '../ratelimit/store.ts';
import { clientKey } from './client-address.ts';
import { ApiError } from './errors.ts';
import { failureLimit, rateLimit } from './rate-limit.ts';

/** Errors as the app answers them: status, the error's extra headers, the envelope. */
const errorHandler: ErrorRequestHandler = (err, _req, res, _next) => {
  const apiError = err instanceof ApiError ? err : new ApiError('INTERNAL_ERROR', 'Internal error.');
  res.set(apiError.headers).status(apiError.status).json({
    success: false,
    error: { code: apiError.code, message: apiError.message, details: apiError.details },
  });
};

const servers: import('node:http').Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function serve(app: express.Express): Promise<string> {
  app.use(errorHandler);
  const server = app.listen(0, '127.0.0.1');
  servers.push(server);
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A clock the test moves by hand; starts 250 ms into a clock hour (windows align to the clock). */
function manualClock(start = 1_800_000_000_000 + 250) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

interface Answer {
  status: number;
  limit: number;
  remaining: number;
  reset: number;
  retryAfter: string | null;
  policy: string | null;
  draft: string | null;
  body: { error?: { code: string } };
}

async function call(url: string, init?: RequestInit): Promise<Answer> {
  const res = await fetch(url, init);
  return {
    status: res.status,
    limit: Number(res.headers.get('x-ratelimit-limit')),
    remaining: Number(res.headers.get('x-ratelimit-remaining')),
    reset: Number(res.headers.get('x-ratelimit-reset')),
    retryAfter: res.headers.get('retry-after'),
    policy: res.headers.get('ratelimit-policy'),
    draft: res.headers.get('ratelimit'),
    body: (await res.json()) as Answer['body'],
  };
}

describe('rateLimit middleware over real HTTP', () => {
  // The in-process store decides within the call; a shared store (Redis) answers by a promise.
  const asPromised = (memory: MemoryRateLimitStore): RateLimitStore => ({
    hit: (key, limit, windowMs) => new Promise((r) => setImmediate(() => r(memory.hit(key, limit, windowMs)))),
    refund: (key, resetAt) => memory.refund(key, resetAt),
    reset: (key) => memory.reset(key),
  });
  it.each([
    ['decided at once', (memory: MemoryRateLimitStore): RateLimitStore => memory],
    ['answered by a promise', asPromised],
  ])('lets exactly the limit through out of 100 parallel requests, with consistent headers (%s)', async (_how, storeOf) => {
    const clock = manualClock();
    const store = storeOf(new MemoryRateLimitStore({ now: clock.now }));
    let handled = 0;
    const app = express();
    app.get(
      '/tool',
      rateLimit({ store, name: 'tools-ip-info', key: clientKey, limit: 30, windowMs: 60_000 }),
      (_req, res) => {
        handled++;
        res.json({ ok: true });
      },
    );
    const base = await serve(app);

    const answers = await Promise.all(Array.from({ length: 100 }, () => call(`${base}/tool`)));
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(ok).toHaveLength(30);
    expect(refused).toHaveLength(70);
    expect(handled).toBe(30);

    // The clock-aligned minute that contains now ends at the next full minute.
    const resetSeconds = 1_800_000_060;
    for (const a of answers) {
      expect(a.limit).toBe(30);
      expect(a.reset).toBe(resetSeconds);
      expect(a.policy).toBe('"tools-ip-info";q=30;w=60');
    }
    // Each admitted request saw a different count: remaining 29 … 0, each once.
    expect(ok.map((a) => a.remaining).sort((x, y) => x - y)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    for (const a of refused) {
      expect(a.remaining).toBe(0);
      expect(a.body.error?.code).toBe('RATE_LIMITED');
      // 59.75 s of the window are left, rounded up; the same in the draft header.
      expect(a.retryAfter).toBe('60');
      expect(a.draft).toBe('"tools-ip-info";r=0;t=60');
    }
  });

  it('Retry-After counts down with the clock and matches X-RateLimit-Reset', async () => {
    const clock = manualClock();
    const store = new MemoryRateLimitStore({ now: clock.now });
    const app = express();
    app.get('/x', rateLimit({ store, name: 'n', key: () => 'k', limit: 2, windowMs: 60_000 }), (_req, res) => {
      res.json({});
    });
    const base = await serve(app);
    expect((await call(`${base}/x`)).remaining).toBe(1);
    expect((await call(`${base}/x`)).remaining).toBe(0);
    clock.advance(44_500);
    const refused = await call(`${base}/x`);
    expect(refused.status).toBe(429);
    // 60 - 0.25 - 44.5 = 15.25 s left, rounded up.
    expect(refused.retryAfter).toBe('16');
    expect(refused.reset).toBe(1_800_000_060);
    const nowSeconds = clock.now() / 1000;
    expect(Math.abs(refused.reset - nowSeconds - Number(refused.retryAfter))).toBeLessThanOrEqual(1);
  });

  it('opens a fresh window once the old one has ended', async () => {
    const clock = manualClock();
    const store = new MemoryRateLimitStore({ now: clock.now });
    const app = express();
    app.get('/x', rateLimit({ store, name: 'n', key: () => 'k', limit: 3, windowMs: 60_000 }), (_req, res) => {
      res.json({});
    });
    const base = await serve(app);
    for (let i = 0; i < 3; i++) expect((await call(`${base}/x`)).status).toBe(200);
    const first = await call(`${base}/x`);
    expect(first.status).toBe(429);

    expect(first.reset).toBe(1_800_000_060);
    clock.advance(59_749); // 1 ms before the full minute
    expect((await call(`${base}/x`)).status).toBe(429);
    clock.advance(1);
    const fresh = await call(`${base}/x`);
    expect(fresh.status).toBe(200);
    expect(fresh.remaining).toBe(2);
    expect(fresh.reset).toBe(1_800_000_120);
  });

  it('counts each key on its own and takes the limit per request (plans)', async () => {
    const store = new MemoryRateLimitStore();
    const app = express();
    app.get(
      '/backup',
      rateLimit({
        store,
        name: 'backup-api',
        key: (req: Request) => req.header('x-account') ?? '',
        limit: (req: Request) => planLimit(req.header('x-plan') ?? ''),
        windowMs: 3_600_000,
      }),
      (_req, res) => {
        res.json({});
      },
    );
    const base = await serve(app);
    const free = await call(`${base}/backup`, { headers: { 'x-account': 'a', 'x-plan': 'free_trial' } });
    expect([free.limit, free.remaining]).toEqual([100, 99]);
    const pro = await call(`${base}/backup`, { headers: { 'x-account': 'b', 'x-plan': 'pro' } });
    expect([pro.limit, pro.remaining]).toEqual([1000, 999]);
    const business = await call(`${base}/backup`, { headers: { 'x-account': 'c', 'x-plan': 'business' } });
    expect([business.limit, business.remaining]).toEqual([10000, 9999]);
    expect(business.policy).toBe('"backup-api";q=10000;w=3600');
    const freeAgain = await call(`${base}/backup`, { headers: { 'x-account': 'a', 'x-plan': 'free_trial' } });
    expect(freeAgain.remaining).toBe(98);
  });

  it('can leave out the draft headers', async () => {
    const app = express();
    const store = new MemoryRateLimitStore();
    app.get('/x', rateLimit({ store, name: 'n', key: () => 'k', limit: 1, windowMs: 1000, draftHeaders: false }), (_req, res) => {
      res.json({});
    });
    const base = await serve(app);
    const a = await call(`${base}/x`);
    expect(a.limit).toBe(1);
    expect(a.policy).toBeNull();
    expect(a.draft).toBeNull();
  });
});

describe('failureLimit over real HTTP (POST /auth/token and other operations)', () => {
  const GOOD = 'right-secret';

  function authApp(store: MemoryRateLimitStore, checked: { count: number }) {
    const failures = failureLimit({ store, name: 'auth-failures', key: clientKey, limit: 3, windowMs: 3_600_000 });
    const app = express();
    app.use(express.json());
    app.post(
      '/auth/token',
      rateLimit({ store, name: 'auth-token', key: clientKey, limit: 50, windowMs: 3_600_000 }),
      failures.guard,
      async (req, res) => {
        checked.count++;
        await new Promise((r) => setTimeout(r, 5));
        if ((req.body as { secret?: string }).secret !== GOOD) {
          throw new ApiError('INVALID_CREDENTIALS', 'Bad key or secret.');
        }
        res.json({ access_token: 't' });
      },
    );
    // Another operation: a request without a valid token is a failure too.
    app.get('/backup', (req, res) => {
      if (req.header('authorization') !== 'Bearer good') throw new ApiError('UNAUTHORIZED', 'A valid bearer token is required.');
      res.json({ items: [] });
    });
    app.use(failures.countErrors);
    return app;
  }

  const attempt = (base: string, secret: string) =>
    call(`${base}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ secret }),
    });

  it('refuses even good credentials after the failures, until the window ends', async () => {
    const clock = manualClock();
    const store = new MemoryRateLimitStore({ now: clock.now });
    const checked = { count: 0 };
    const base = await serve(authApp(store, checked));

    for (let i = 0; i < 3; i++) expect((await attempt(base, 'wrong')).status).toBe(401);
    const locked = await attempt(base, GOOD);
    expect(locked.status).toBe(429);
    expect(locked.body.error?.code).toBe('RATE_LIMITED');
    // The headers describe the binding limit: the failure limit, to the end of the clock hour.
    expect([locked.limit, locked.remaining]).toEqual([3, 0]);
    expect(locked.reset).toBe(1_800_003_600);
    expect(locked.retryAfter).toBe('3600');
    expect(checked.count).toBe(3);

    clock.advance(3_599_749);
    expect((await attempt(base, GOOD)).status).toBe(429);
    clock.advance(1);
    expect((await attempt(base, GOOD)).status).toBe(200);
  });

  it('does not count successes, and a success does not wipe earlier failures', async () => {
    const store = new MemoryRateLimitStore();
    const checked = { count: 0 };
    const base = await serve(authApp(store, checked));
    expect((await attempt(base, 'wrong')).status).toBe(401);
    expect((await attempt(base, 'wrong')).status).toBe(401);
    for (let i = 0; i < 5; i++) expect((await attempt(base, GOOD)).status).toBe(200);
    expect((await attempt(base, 'wrong')).status).toBe(401);
    expect((await attempt(base, GOOD)).status).toBe(429);
  });

  it('checks at most the limit of credentials out of a parallel burst', async () => {
    const store = new MemoryRateLimitStore();
    const checked = { count: 0 };
    const base = await serve(authApp(store, checked));
    const answers = await Promise.all(Array.from({ length: 40 }, () => attempt(base, 'wrong')));
    expect(checked.count).toBe(3);
    expect(answers.filter((a) => a.status === 401)).toHaveLength(3);
    // 40 attempts against a request limit of 50: the rest are refused by the failure limit.
    expect(answers.filter((a) => a.status === 429)).toHaveLength(37);
  });

  it('headers describe whichever limit has fewer requests left', async () => {
    const store = new MemoryRateLimitStore();
    const checked = { count: 0 };
    const base = await serve(authApp(store, checked));
    const first = await attempt(base, GOOD);
    // Requests: 50 → 49 left. Failures: 3 → 2 left counting this attempt → the failure limit binds.
    expect([first.limit, first.remaining]).toEqual([3, 2]);
    expect(first.policy).toBe('"auth-failures";q=3;w=3600');
  });

  it('counts requests without a valid token on other operations, which then lock the login', async () => {
    const store = new MemoryRateLimitStore();
    const checked = { count: 0 };
    const base = await serve(authApp(store, checked));
    const fine = await call(`${base}/backup`, { headers: { authorization: 'Bearer good' } });
    expect(fine.status).toBe(200);
    const answers: Answer[] = [];
    for (let i = 0; i < 4; i++) answers.push(await call(`${base}/backup`, { headers: { authorization: 'Bearer forged' } }));
    // Still 401 (the operation's own answer), with headers describing the failure limit.
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401]);
    expect(answers.map((a) => a.remaining)).toEqual([2, 1, 0, 0]);
    expect(answers.every((a) => a.limit === 3 && a.body.error?.code === 'UNAUTHORIZED')).toBe(true);
    expect((await attempt(base, GOOD)).status).toBe(429);
    expect(checked.count).toBe(0);
  });

  it('does not count a login failure twice', async () => {
    const store = new MemoryRateLimitStore();
    const checked = { count: 0 };
    const base = await serve(authApp(store, checked));
    const first = await attempt(base, 'wrong');
    expect([first.status, first.remaining]).toEqual([401, 2]);
    const second = await attempt(base, 'wrong');
    expect([second.status, second.remaining]).toEqual([401, 1]);
  });
});

describe('MemoryRateLimitStore', () => {
  it('sweeps expired windows so memory holds only live ones', async () => {
    const clock = manualClock();
    const store = new MemoryRateLimitStore({ now: clock.now, sweepIntervalMs: 10_000 });
    for (let i = 0; i < 1000; i++) await store.hit(`k${i}`, 5, 5_000);
    expect(store.size).toBe(1000);
    clock.advance(10_000);
    await store.hit('fresh', 5, 5_000);
    expect(store.size).toBe(1);
  });

  it('refunds only within the same window', async () => {
    const clock = manualClock();
    const store = new MemoryRateLimitStore({ now: clock.now });
    const first = await store.hit('k', 2, 1_000);
    await store.hit('k', 2, 1_000);
    await store.refund('k', first.resetAt);
    expect((await store.hit('k', 2, 1_000)).allowed).toBe(true);
    expect((await store.hit('k', 2, 1_000)).allowed).toBe(false);
    clock.advance(1_000);
    const next = await store.hit('k', 2, 1_000);
    await store.refund('k', first.resetAt); // the old window: no effect
    expect((await store.hit('k', 2, 1_000)).remaining).toBe(0);
    expect(next.remaining).toBe(1);
  });
});

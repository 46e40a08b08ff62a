import { afterEach, describe, expect, it } from 'vitest';
import { createTransport, type RetryEvent } from '../src/transport.ts';
import { errorEnvelope, rejection, sendJson, startScriptedServer, successEnvelope, type ScriptedServer } from './test-server.ts';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const fastRetry = { baseDelayMs: 5, maxDelayMs: 20 };
const safePosts = [/\/auth\/token$/];

describe('transport', () => {
  it('retries a 429 after the Retry-After delay, reusing the request id', async () => {
    server = await startScriptedServer((_req, res, i) => {
      if (i === 0) sendJson(res, 429, errorEnvelope('RATE_LIMITED', 'Slow down.'), { 'retry-after': '1' });
      else sendJson(res, 200, successEnvelope({ ok: true }));
    });
    const retries: RetryEvent[] = [];
    const send = createTransport({ retry: fastRetry, onRetry: (event) => retries.push(event) });
    const response = await send(new Request(`${server.origin}/api/v1/backup`));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ success: true, data: { ok: true } });
    expect(server.seen).toHaveLength(2);
    expect(retries).toEqual([expect.objectContaining({ attempt: 1, delayMs: 1000, reason: 429 })]);
    const [first, second] = server.seen;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
    expect(first!.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    expect(second!.headers['x-request-id']).toBe(first!.headers['x-request-id']);
  });

  it('retries 503 with jittered exponential backoff, even on POST /backup, and gives up after maxAttempts', async () => {
    server = await startScriptedServer((_req, res) =>
      sendJson(res, 503, errorEnvelope('SERVICE_UNAVAILABLE', 'Try later.'), { 'x-request-id': 'req_server' }),
    );
    const retries: RetryEvent[] = [];
    const send = createTransport({ retry: { ...fastRetry, maxAttempts: 3 }, onRetry: (e) => retries.push(e) });
    const error = await rejection(
      send(new Request(`${server.origin}/api/v1/backup`, { method: 'POST', body: '{"source":"/data"}' })),
    );
    expect(error).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', attempts: 3, requestId: 'req_server' });
    expect(server.seen).toHaveLength(3);
    expect(server.seen.every((r) => r.body === '{"source":"/data"}')).toBe(true);
    expect(retries.map((r) => r.attempt)).toEqual([1, 2]);
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(0);
    expect(retries[0]!.delayMs).toBeLessThan(5);
    expect(retries[1]!.delayMs).toBeLessThan(10);
  });

  it('retries a 500 on a GET, never on POST /backup', async () => {
    server = await startScriptedServer((req, res, i) => {
      if (req.method === 'GET' && i > 1) sendJson(res, 200, successEnvelope({ ok: true }));
      else sendJson(res, 500, errorEnvelope('INTERNAL_ERROR', 'Something broke.'));
    });
    const send = createTransport({ retry: fastRetry });
    const created = await rejection(send(new Request(`${server.origin}/api/v1/backup`, { method: 'POST', body: '{}' })));
    expect(created).toMatchObject({ status: 500, code: 'INTERNAL_ERROR', attempts: 1 });
    const read = await send(new Request(`${server.origin}/api/v1/backup/bkp_1`));
    expect(read.status).toBe(200);
    expect(server.seen.map((r) => r.method)).toEqual(['POST', 'GET', 'GET']);
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs', async () => {
    server = await startScriptedServer((_req, res) =>
      sendJson(res, 429, errorEnvelope('RATE_LIMITED', 'Hourly quota used.'), { 'retry-after': '3600' }),
    );
    const send = createTransport({ retry: fastRetry });
    const error = await rejection(send(new Request(`${server.origin}/api/v1/files`)));
    expect(error).toMatchObject({ status: 429, code: 'RATE_LIMITED', retryAfterMs: 3_600_000, attempts: 1 });
    expect(server.seen).toHaveLength(1);
  });

  it('surfaces the envelope as ApiClientError without retrying other 4xx', async () => {
    server = await startScriptedServer((_req, res) =>
      sendJson(res, 422, errorEnvelope('INVALID_SOURCE', 'The source path does not exist.', { path: '/nope' })),
    );
    const send = createTransport({ retry: fastRetry });
    const error = await rejection(
      send(
        new Request(`${server.origin}/api/v1/backup`, {
          method: 'POST',
          body: '{}',
          headers: { 'x-request-id': 'req_mine' },
        }),
      ),
    );
    expect(error).toMatchObject({
      status: 422,
      code: 'INVALID_SOURCE',
      message: 'The source path does not exist.',
      details: { path: '/nope' },
      requestId: 'req_from_body',
    });
    expect(server.seen).toHaveLength(1);
    expect(server.seen[0]!.headers['x-request-id']).toBe('req_mine');
  });

  it('reports a non-envelope error body as UNEXPECTED_RESPONSE', async () => {
    server = await startScriptedServer((_req, res) =>
      sendJson(res, 422, { type: 'x', title: 'Invalid request', detail: 'Prism says no', status: 422 }),
    );
    const error = await rejection(createTransport()(new Request(`${server.origin}/api/v1/status`)));
    expect(error).toMatchObject({ status: 422, code: 'UNEXPECTED_RESPONSE', message: 'Prism says no' });
    expect(error.details).toMatchObject({ body: { title: 'Invalid request' } });
  });

  it('does not repeat POST /backup after the connection dropped mid-request, but repeats a GET', async () => {
    server = await startScriptedServer((_req, res) => res.socket?.destroy());
    const send = createTransport({ retry: { ...fastRetry, maxAttempts: 3 } });
    const post = await rejection(send(new Request(`${server.origin}/api/v1/backup`, { method: 'POST', body: '{}' })));
    expect(post).toMatchObject({ status: 0, code: 'NETWORK_ERROR', attempts: 1 });
    expect(server.seen).toHaveLength(1);

    const get = await rejection(send(new Request(`${server.origin}/api/v1/backup/bkp_1`)));
    expect(get).toMatchObject({ status: 0, code: 'NETWORK_ERROR', attempts: 3 });
    expect(server.seen).toHaveLength(4);
  });

  it('repeats any request when the connection was refused (nothing was sent)', async () => {
    server = await startScriptedServer(() => undefined);
    const origin = server.origin;
    await server.close();
    server = undefined;
    const retries: RetryEvent[] = [];
    const send = createTransport({ retry: { ...fastRetry, maxAttempts: 3 }, onRetry: (e) => retries.push(e) });
    const error = await rejection(send(new Request(`${origin}/api/v1/backup`, { method: 'POST', body: '{}' })));
    expect(error).toMatchObject({ status: 0, code: 'NETWORK_ERROR', attempts: 3 });
    expect(retries.map((r) => r.reason)).toEqual(['NETWORK_ERROR', 'NETWORK_ERROR']);
  });

  it('times out each attempt; retries a safe POST, not POST /backup', async () => {
    server = await startScriptedServer(() => undefined); // never answers
    const send = createTransport({ timeoutMs: 150, retry: { ...fastRetry, maxAttempts: 2 }, safePosts });
    const backup = await rejection(send(new Request(`${server.origin}/api/v1/backup`, { method: 'POST', body: '{}' })));
    expect(backup).toMatchObject({ status: 0, code: 'TIMEOUT', attempts: 1 });
    expect(server.seen).toHaveLength(1);

    const token = await rejection(
      send(new Request(`${server.origin}/api/v1/auth/token`, { method: 'POST', body: '{}' })),
    );
    expect(token).toMatchObject({ status: 0, code: 'TIMEOUT', attempts: 2 });
    expect(server.seen).toHaveLength(3);
  });

  it('lets Prefer: wait=N extend the attempt timeout', async () => {
    server = await startScriptedServer((_req, res) => {
      setTimeout(() => sendJson(res, 202, successEnvelope({ id: 'bkp_1' })), 400);
    });
    const send = createTransport({ timeoutMs: 100, retry: { maxAttempts: 1 } });
    const response = await send(
      new Request(`${server.origin}/api/v1/backup`, { method: 'POST', body: '{}', headers: { prefer: 'wait=0' } }),
    );
    expect(response.status).toBe(202);
  });

  it('stops at once when the caller aborts', async () => {
    server = await startScriptedServer((_req, res) =>
      sendJson(res, 503, errorEnvelope('SERVICE_UNAVAILABLE', 'Later.'), { 'retry-after': '5' }),
    );
    const controller = new AbortController();
    const send = createTransport({ onRetry: () => setTimeout(() => controller.abort(), 50) });
    const error = await rejection(send(new Request(`${server.origin}/api/v1/status`, { signal: controller.signal })));
    expect(error).toMatchObject({ status: 0, code: 'ABORTED' });
    expect(server.seen).toHaveLength(1);
  });

  it('renews the token once on TOKEN_EXPIRED and replays the request', async () => {
    server = await startScriptedServer((req, res) => {
      if (req.headers.authorization === 'Bearer fresh') sendJson(res, 200, successEnvelope({ ok: true }));
      else sendJson(res, 401, errorEnvelope('TOKEN_EXPIRED', 'The token has expired.'));
    });
    const issued: string[] = [];
    let next = 'stale';
    const send = createTransport({
      auth: {
        tokenFor: async () => {
          issued.push(next);
          return next;
        },
        expire: (token) => {
          expect(token).toBe('stale');
          next = 'fresh';
        },
      },
    });
    const response = await send(new Request(`${server.origin}/api/v1/backup`, { method: 'POST', body: '{}' }));
    expect(response.status).toBe(200);
    expect(issued).toEqual(['stale', 'fresh']);
    expect(server.seen.map((r) => r.headers.authorization)).toEqual(['Bearer stale', 'Bearer fresh']);
  });

  it('gives up when the renewed token is refused too', async () => {
    server = await startScriptedServer((_req, res) => sendJson(res, 401, errorEnvelope('TOKEN_EXPIRED', 'Expired.')));
    let expired = 0;
    const send = createTransport({
      auth: { tokenFor: async () => 'tok', expire: () => void (expired += 1) },
    });
    const error = await rejection(send(new Request(`${server.origin}/api/v1/files`)));
    expect(error).toMatchObject({ status: 401, code: 'TOKEN_EXPIRED' });
    expect(expired).toBe(1);
    expect(server.seen).toHaveLength(2);
  });
});

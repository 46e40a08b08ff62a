import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.ts';
import { openStore } from '../store/index.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { onlyTargets } from './net/target-policy.ts';

/** A loopback HTTP listener that records every connection made to it. */
async function listener(handler: (url: string) => { status: number; location?: string }): Promise<{ port: number; connections: number; server: Server }> {
  const state = { port: 0, connections: 0, server: undefined as unknown as Server };
  state.server = createServer((req, res) => {
    const { status, location } = handler(req.url ?? '/');
    res.writeHead(status, location ? { location } : {});
    res.end('body');
  });
  state.server.on('connection', () => state.connections++);
  await new Promise<void>((r) => state.server.listen(0, '127.0.0.1', () => r()));
  state.port = (state.server.address() as AddressInfo).port;
  return state;
}

describe('public tools over real HTTP', () => {
  const harnesses: Harness[] = [];
  const servers: Server[] = [];
  afterEach(async () => {
    for (const h of harnesses.splice(0)) await h.cleanup();
    for (const s of servers.splice(0)) s.close();
  });
  async function harness(env: Record<string, string> = {}, siteCheck = {}, ipInfo = {}) {
    const h = await startHarness({ RATE_LIMITS: 'off', ...env }, { siteCheck, ipInfo });
    harnesses.push(h);
    return h;
  }
  const check = (h: Harness, url: string) => h.request('/api/tools/check-site', { method: 'POST', json: { url } });

  it('check-site: up on 2xx/3xx after redirects, down with a reason otherwise (loopback allowed for the test)', async () => {
    const site = await listener((url) => (url === '/old' ? { status: 301, location: '/new' } : url === '/new' ? { status: 200 } : url === '/loop' ? { status: 302, location: '/loop' } : { status: 503 }));
    servers.push(site.server);
    const h = await harness({ CHECK_SITE_ALLOW_PRIVATE: 'true' });
    const up = await check(h, `http://127.0.0.1:${site.port}/old`);
    expect(up.status).toBe(200);
    expect(up.body.data).toMatchObject({ url: `http://127.0.0.1:${site.port}/old`, status: 'up', http_status: 200, reason: null });
    expect(up.body.data.response_time_ms).toBeGreaterThanOrEqual(0);
    const down = await check(h, `http://127.0.0.1:${site.port}/broken`);
    expect(down.body.data).toMatchObject({ status: 'down', http_status: 503, reason: 'HTTP_ERROR' });
    const loop = await check(h, `http://127.0.0.1:${site.port}/loop`);
    expect(loop.body.data).toMatchObject({ status: 'down', reason: 'TOO_MANY_REDIRECTS' });
    const closed = await listener(() => ({ status: 200 }));
    const closedPort = closed.port;
    await new Promise((r) => closed.server.close(r));
    const refused = await check(h, `http://127.0.0.1:${closedPort}/`);
    expect(refused.body.data).toMatchObject({ status: 'down', http_status: null, reason: 'CONNECTION_REFUSED' });
  });

  it('check-site: refuses loopback however it is spelled, without connecting', async () => {
    const site = await listener(() => ({ status: 200 }));
    servers.push(site.server);
    const h = await harness({}, { resolve: async (host: string) => (host === 'rebind.example' ? ['127.0.0.1'] : []) });
    const p = site.port;
    for (const url of [
      `http://127.0.0.1:${p}/`,
      `http://localhost:${p}/`,
      `http://2130706433:${p}/`,
      `http://0x7f.0.0.1:${p}/`,
      `http://127.1:${p}/`,
      `http://[::1]:${p}/`,
      `http://[::ffff:127.0.0.1]:${p}/`,
      `http://[::ffff:7f00:1]:${p}/`,
      `http://127.0.0.1.:${p}/`,
      `http://rebind.example:${p}/`,
    ]) {
      const res = await check(h, url);
      expect(res.status, url).toBe(422);
      expect(res.body.error.code, url).toBe('URL_NOT_ALLOWED');
    }
    expect(site.connections).toBe(0);
    for (const url of ['ftp://example.com/', 'http://user:pw@example.com/', 'not a url', 'file:///etc/passwd']) {
      const res = await check(h, url);
      expect(res.status, url).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('check-site: a redirect to a refused address is refused before it is followed', async () => {
    const inner = await listener(() => ({ status: 200 }));
    const outer = await listener(() => ({ status: 302, location: `http://127.0.0.1:${inner.port}/` }));
    servers.push(inner.server, outer.server);
    const h = await harness({}, { policy: onlyTargets([{ address: '127.0.0.1', port: outer.port }]) });
    const res = await check(h, `http://127.0.0.1:${outer.port}/`);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('URL_NOT_ALLOWED');
    expect(outer.connections).toBe(1);
    expect(inner.connections).toBe(0);
  });

  it('ip-info describes the socket address and the user agent', async () => {
    const h = await harness();
    const res = await h.request('/api/tools/ip-info', { headers: { 'user-agent': 'x'.repeat(600), 'X-Forwarded-For': '8.8.8.8' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ ip: '127.0.0.1', version: 4, scope: 'loopback' });
    expect(res.body.data.user_agent).toHaveLength(512);
  });

  it('ip-info behind a trusted proxy reports the forwarded public address with its confirmed name', async () => {
    const lookup = () => ({
      reverse: async (ip: string) => (ip === '8.8.4.4' ? ['resolver.example.'] : []),
      forward: async (name: string) => (name === 'resolver.example' ? ['8.8.4.4'] : []),
    });
    const h = await harness({ TRUST_PROXY: 'loopback' }, {}, { lookup });
    const res = await h.request('/api/tools/ip-info', { headers: { 'X-Forwarded-For': '8.8.4.4' } });
    expect(res.body.data).toEqual({ ip: '8.8.4.4', version: 4, scope: 'public', hostname: 'resolver.example', user_agent: expect.any(String) });
    const v6 = await h.request('/api/tools/ip-info', { headers: { 'X-Forwarded-For': '2001:db8::1' } });
    expect(v6.body.data).toMatchObject({ ip: '2001:db8::1', version: 6, scope: 'reserved', hostname: null });
  });

  it('newsletter: 201 once, then 200 with the first record, never a duplicate', async () => {
    const h = await harness();
    const first = await h.request('/api/newsletter/subscribe', { method: 'POST', json: { email: 'Ann.Lee@Example.COM', source: 'footer' } });
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({ email: 'Ann.Lee@example.com', source: 'footer', status: 'subscribed' });
    const again = await h.request('/api/newsletter/subscribe', { method: 'POST', json: { email: 'Ann.Lee@example.com', source: 'blog' } });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first.body.data);
    const parallel = await Promise.all(Array.from({ length: 10 }, () => h.request('/api/newsletter/subscribe', { method: 'POST', json: { email: 'par@example.com', source: 'x' } })));
    expect(parallel.filter((p) => p.status === 201)).toHaveLength(1);
    for (const bad of [{ email: 'not-an-email', source: 'x' }, { email: 'a@b.example' }, { email: 'a@b.example', source: '' }, { email: 'a@b.example', source: 'x', extra: 1 }]) {
      const res = await h.request('/api/newsletter/subscribe', { method: 'POST', json: bad });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('contacts: stored durably before 201, unknown types and bounds refused', async () => {
    const h = await harness();
    const res = await h.request('/api/contacts/report-issue', { method: 'POST', json: { name: 'Bo', email: 'bo@Example.org', subject: 'Bug', message: 'line 1\nline 2' } });
    expect(res.status).toBe(201);
    expect(res.body.data.id).toMatch(/^msg_[0-9A-Z]{26}$/);
    expect(res.body.data.type).toBe('report-issue');
    // Read back through a second connection to the store: committed before the 201.
    const reader = await openStore(loadConfig(h.env));
    try {
      expect(await reader.contacts.get(res.body.data.id)).toMatchObject({ type: 'report-issue', email: 'bo@example.org', message: 'line 1\nline 2' });
    } finally {
      await reader.close();
    }
    const body = { name: 'Bo', email: 'bo@example.org', subject: 'S', message: 'M' };
    const unknown = await h.request('/api/contacts/complaints', { method: 'POST', json: body });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.errors[0].path).toBe('/path/type');
    expect((await h.request('/api/contacts/sales', { method: 'POST', json: { ...body, message: 'x'.repeat(10_001) } })).status).toBe(400);
    expect((await h.request('/api/contacts/sales', { method: 'POST', json: { ...body, name: '   ' } })).status).toBe(400);
    expect((await h.request('/api/contacts/sales', { method: 'POST', json: { ...body, message: 'x'.repeat(10_000) } })).status).toBe(201);
  });
});

import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../testing/harness.ts';
import { HSTS } from './https-policy.ts';

/** An address of this host that is not loopback, so a request can arrive from off loopback. */
function outsideAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  throw new Error('this test needs a non-loopback IPv4 interface on the host (none found)');
}

describe('only HTTPS is served: behind a trusted proxy', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ TRUST_PROXY: 'loopback' });
  });
  afterAll(() => h.cleanup());

  it('refuses what the proxy says came over plain HTTP with 403 HTTPS_REQUIRED, before anything else', async () => {
    for (const [path, init] of [
      ['/api/v1/status', {}],
      ['/api/v1/backup', {}], // no token: still 403, never 401
      ['/api/v1/auth/token', { method: 'POST', json: { api_key: 'key_x', secret: 'y'.repeat(20) } }],
      ['/api/tools/ip-info', {}],
    ] as const) {
      const res = await h.request(path, { ...init, headers: { 'X-Forwarded-Proto': 'http' } });
      expect(res.status, path).toBe(403);
      expect(res.body.error).toEqual({ code: 'HTTPS_REQUIRED', message: expect.stringContaining('HTTPS'), details: {} });
      expect(res.headers.get('strict-transport-security')).toBeNull();
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });

  it('serves what the proxy says came over HTTPS, with HSTS', async () => {
    const res = await h.request('/api/v1/status', { headers: { 'X-Forwarded-Proto': 'https' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('strict-transport-security')).toBe(HSTS);
    const chain = await h.request('/api/tools/ip-info', { headers: { 'X-Forwarded-Proto': 'https, http', 'X-Forwarded-For': '198.51.100.4' } });
    expect(chain.status).toBe(200);
    expect(chain.headers.get('strict-transport-security')).toBe(HSTS);
  });

  it('keeps direct loopback calls (no proxy header) working over plain HTTP, without HSTS', async () => {
    const res = await h.request('/api/v1/status');
    expect(res.status).toBe(200);
    expect(res.headers.get('strict-transport-security')).toBeNull();
  });
});

describe('only HTTPS is served: without a trusted proxy', () => {
  it('ignores X-Forwarded-Proto from a client it does not trust', async () => {
    const h = await startHarness();
    try {
      const res = await h.request('/api/v1/status', { headers: { 'X-Forwarded-Proto': 'http' } });
      expect(res.status).toBe(200);
      const https = await h.request('/api/v1/status', { headers: { 'X-Forwarded-Proto': 'https' } });
      expect(https.headers.get('strict-transport-security')).toBeNull();
    } finally {
      await h.cleanup();
    }
  });

  it('refuses plain HTTP from off loopback, whatever the client claims', async () => {
    // Listening on every interface is allowed only with TLS or a trusted proxy: trust one that is not the caller.
    const h = await startHarness({ HOST: '0.0.0.0', TRUST_PROXY: '10.255.255.254' });
    try {
      const base = `http://${outsideAddress()}:${new URL(h.base).port}`;
      for (const headers of [{}, { 'X-Forwarded-Proto': 'https' }]) {
        const res = await fetch(`${base}/api/v1/status`, { headers });
        expect(res.status).toBe(403);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('HTTPS_REQUIRED');
      }
    } finally {
      await h.cleanup();
    }
  });
});

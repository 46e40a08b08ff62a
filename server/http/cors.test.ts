// CORS_ORIGINS over real HTTP: off by default, preflights answered for listed origins only, and
// every answer to a listed origin (errors and 429s included) readable by its page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, ConfigError } from '../config.ts';
import { startHarness, type Harness } from '../testing/harness.ts';

const APP = 'http://localhost:5173';
let on: Harness;
let off: Harness;

beforeAll(async () => {
  [on, off] = await Promise.all([startHarness({ CORS_ORIGINS: `${APP}, https://app.example.org` }), startHarness()]);
});
afterAll(async () => {
  await Promise.all([on?.cleanup(), off?.cleanup()]);
});

const preflight = (h: Harness, origin: string) =>
  h.request('/api/v1/backup', {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, x-request-id, prefer' },
  });

describe('CORS', () => {
  it('answers a preflight from a listed origin at once, before authentication', async () => {
    const answer = await preflight(on, APP);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe(APP);
    expect(answer.headers.get('access-control-allow-methods')).toContain('POST');
    expect(answer.headers.get('access-control-allow-headers')).toBe('authorization, content-type, x-request-id, prefer');
    expect(Number(answer.headers.get('access-control-max-age'))).toBeGreaterThan(0);
    expect(answer.headers.get('vary')).toContain('Origin');
  });

  it('lets the listed origin read every answer and its headers, errors included', async () => {
    const status = await on.request('/api/v1/status', { headers: { origin: APP } });
    expect(status.status).toBe(200);
    expect(status.headers.get('access-control-allow-origin')).toBe(APP);
    expect(status.headers.get('access-control-expose-headers')).toBe('*');
    const refused = await on.request('/api/v1/backup', { headers: { origin: 'https://app.example.org' } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('https://app.example.org');
    const limited = await on.request('/api/tools/ip-info', { headers: { origin: APP } });
    expect(limited.headers.get('x-ratelimit-remaining')).not.toBeNull();
    expect(limited.headers.get('access-control-allow-origin')).toBe(APP);
  });

  it('gives other origins, and every origin when CORS_ORIGINS is unset, no CORS header', async () => {
    const foreign = await preflight(on, 'https://evil.example.net');
    expect(foreign.status).toBe(405);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    expect((await on.request('/api/v1/status', { headers: { origin: 'https://evil.example.net' } })).headers.get('access-control-allow-origin')).toBeNull();
    const unset = await preflight(off, APP);
    expect(unset.status).toBe(405);
    expect(unset.body).toMatchObject({ error: { code: 'METHOD_NOT_ALLOWED' } });
    expect(unset.headers.get('access-control-allow-origin')).toBeNull();
    expect((await off.request('/api/v1/status', { headers: { origin: APP } })).headers.get('access-control-allow-origin')).toBeNull();
  });

  it('reads CORS_ORIGINS strictly: origins or *, anything else stops the server at start', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toBe('*');
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example.org/, http://localhost:3000' }).corsOrigins).toEqual(['https://a.example.org', 'http://localhost:3000']);
    for (const bad of ['a.example.org', 'https://a.example.org/app', 'ftp://a.example.org', '*, https://a.example.org']) {
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).toThrow(/CORS_ORIGINS/);
    }
  });
});

import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusWithin } from '../testing/eventually.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { startListeningServer } from '../testing/processes.ts';

describe('health probes', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.cleanup());

  const expectNotReady = async (failing: string[]) => {
    const res = await h.request('/readyz');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.body).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', details: { failing } } });
    expect(res.body.error.message).toContain(failing.join(', '));
    expect(res.body.meta.request_id).toBe(res.headers.get('x-request-id'));
    return res;
  };

  it('GET /livez and GET /readyz answer 200 in the envelope, with the checks /status runs', async () => {
    const live = await h.request('/livez', { headers: { 'X-Request-Id': 'probe-1' } });
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({ success: true, data: { status: 'live' }, meta: { request_id: 'probe-1' } });
    expect(live.headers.get('x-request-id')).toBe('probe-1');
    expect(await statusWithin(h, '/readyz', 200)).toBe(200);
    const ready = await h.request('/readyz');
    expect(ready.body.data).toMatchObject({ status: 'ready', checks: { database: { status: 'ok' }, storage: { status: 'ok' } } });
    const status = await h.request('/api/v1/status');
    expect(Object.keys(status.body.data.checks)).toEqual(Object.keys(ready.body.data.checks));
    expect((await h.request('/readyz?verbose=1')).body.error.code).toBe('VALIDATION_ERROR');
    expect((await h.request('/livez', { method: 'POST' })).status).toBe(405);
  });

  it('are never rate limited and carry no rate-limit headers', async () => {
    const answers = await Promise.all(Array.from({ length: 80 }, (_, i) => h.request(i % 2 ? '/livez' : '/readyz')));
    for (const [i, res] of answers.entries()) {
      if (i % 2) expect(res.status).toBe(200);
      else expect([200, 503]).toContain(res.status); // a check may miss its 1 s limit on a loaded machine; never 429
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });

  it('turns 503 naming the database while another process holds it locked, and 200 once it lets go', async () => {
    const other = new DatabaseSync(join(h.dataDir, 'service.db'));
    try {
      other.exec('BEGIN EXCLUSIVE');
      await expectNotReady(['database']);
      expect((await h.request('/livez')).status).toBe(200);
      expect((await h.request('/api/v1/status')).body.data).toMatchObject({ status: 'degraded', checks: { database: { status: 'failed' } } });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(await statusWithin(h, '/readyz', 200)).toBe(200);
  });

  it('turns 503 naming storage while the repositories directory cannot be written, and 200 once it can', async () => {
    const repositories = join(h.dataDir, 'repositories');
    renameSync(repositories, `${repositories}.away`);
    writeFileSync(repositories, 'not a directory');
    try {
      const res = await expectNotReady(['storage']);
      expect(res.body.error.details.checks).toMatchObject({ database: { status: 'ok' }, storage: { status: 'failed' } });
      expect((await h.request('/api/v1/status')).body.data).toMatchObject({ status: 'degraded', checks: { storage: { status: 'failed' } } });
    } finally {
      rmSync(repositories);
      renameSync(`${repositories}.away`, repositories);
    }
    expect(await statusWithin(h, '/readyz', 200)).toBe(200);
  });
});

describe('probes with the disk below its free-space threshold', () => {
  let h: Harness;
  beforeAll(async () => {
    // A threshold of the whole filesystem: whatever is free is below it.
    h = await startHarness({ STORAGE_MIN_FREE_BYTES: String(Number.MAX_SAFE_INTEGER), STORAGE_MIN_FREE_PERCENT: '100' });
  });
  afterAll(() => h.cleanup());

  it('report storage failed with free_bytes, /status degraded, yet /readyz ready: low space alone is advisory', async () => {
    expect(await statusWithin(h, '/readyz', 200)).toBe(200);
    const ready = await h.request('/readyz');
    expect(ready.body.data.checks.storage).toMatchObject({ status: 'failed', free_bytes: expect.any(Number) });
    expect(ready.body.data.checks.database.status).toBe('ok');
    const status = await h.request('/api/v1/status');
    expect(status.body.data).toMatchObject({ status: 'degraded', checks: { storage: { status: 'failed' } } });
  });
});

describe('probes behind a TLS-terminating proxy', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ TRUST_PROXY: 'loopback' });
  });
  afterAll(() => h.cleanup());

  it('answer plain HTTP, which the API refuses with 403 HTTPS_REQUIRED, and carry HSTS over HTTPS', async () => {
    const plain = { 'X-Forwarded-Proto': 'http' };
    expect((await h.request('/api/v1/status', { headers: plain })).body.error.code).toBe('HTTPS_REQUIRED');
    for (const path of ['/livez', '/readyz']) {
      const res = await h.request(path, { headers: plain });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('strict-transport-security')).toBeNull();
    }
    const secure = await h.request('/readyz', { headers: { 'X-Forwarded-Proto': 'https' } });
    expect(secure.status).toBe(200);
    expect(secure.headers.get('strict-transport-security')).toBe('max-age=63072000');
  });
});

describe('readiness during shutdown (npm start, SIGTERM)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'probes-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('answers /readyz 503 from SIGTERM until the process exits, while the API serves through the drain', async () => {
    const p = await startListeningServer({ DATA_DIR: join(dir, 'data'), MASTER_KEY_FILE: join(dir, 'keys', 'master.key'), BACKUP_ALLOWED_ROOTS: dir, METRICS_PORT: '0', AUDIT_LOG: join(dir, 'audit.log'), SHUTDOWN_DRAIN_MS: '3000' });
    const origin = `http://127.0.0.1:${p.port}`;
    expect((await fetch(`${origin}/readyz`)).status).toBe(200);
    let exited = false;
    void p.exited.then(() => (exited = true));
    p.child.kill('SIGTERM');

    const readiness: number[] = [];
    let apiDuringDrain = 0;
    let liveDuringDrain = 0;
    const sigtermAt = Date.now();
    while (!exited) {
      try {
        const ready = await fetch(`${origin}/readyz`);
        readiness.push(ready.status);
        if (ready.status === 503) expect(((await ready.json()) as { error: { details: unknown } }).error.details).toEqual({ shutting_down: true });
        if (Date.now() - sigtermAt < 2500) {
          if ((await fetch(`${origin}/api/v1/status`)).status === 200) apiDuringDrain++;
          if ((await fetch(`${origin}/livez`)).status === 200) liveDuringDrain++;
        }
      } catch {
        // the listener has closed: the process is on its way out
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await p.exited).toBe(0);
    expect(readiness.length).toBeGreaterThanOrEqual(3);
    expect(new Set(readiness)).toEqual(new Set([503]));
    expect(apiDuringDrain).toBeGreaterThanOrEqual(1);
    expect(liveDuringDrain).toBeGreaterThanOrEqual(1);
    expect(Date.now() - sigtermAt).toBeGreaterThanOrEqual(3000);
  });
});

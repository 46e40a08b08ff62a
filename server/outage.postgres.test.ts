import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusWithin } from './testing/eventually.ts';
import { startHarness, type Harness } from './testing/harness.ts';
import { startPostgres, type PostgresServer } from './testing/services/postgres.ts';

describe('PostgreSQL down and back', () => {
  let pg: PostgresServer;
  let h: Harness;
  beforeAll(async () => {
    pg = await startPostgres();
    h = await startHarness({ DATABASE_URL: await pg.createDatabase() });
  });
  afterAll(async () => {
    await h?.cleanup();
    await pg?.stop();
  });

  it('answers 503 with Retry-After while it is down, loses nothing, and serves again without a restart', async () => {
    const token = await h.tokenFor(await h.newKey('pro'));
    const src = join(h.root, 'src');
    mkdirSync(src);
    writeFileSync(join(src, 'a.txt'), 'before the outage');
    const before = await h.request('/api/v1/backup', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { source: src } });
    expect(before.body.data.status).toBe('completed');

    await pg.suspend();
    const down = await h.request(`/api/v1/backup/${before.body.data.id}`, { token });
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(down.headers.get('retry-after')).toBe('5');
    const write = await h.request('/api/v1/backup', { method: 'POST', token, json: { source: src } });
    expect(write.status).toBe(503);
    const status = await h.request('/api/v1/status');
    expect(status.status).toBe(200);
    expect(status.body.data).toMatchObject({ status: 'degraded', checks: { database: { status: 'failed' }, storage: { status: 'ok' } } });

    await pg.resume();
    let again = await h.request(`/api/v1/backup/${before.body.data.id}`, { token });
    for (let i = 0; i < 50 && again.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      again = await h.request(`/api/v1/backup/${before.body.data.id}`, { token });
    }
    expect(again.body.data).toMatchObject({ id: before.body.data.id, status: 'completed' });
    expect((await h.request('/api/v1/status')).body.data.status).toBe('ok');
    // The queue and its notifications work again: a new backup is claimed, run and awaited.
    const after = await h.request('/api/v1/backup', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { source: src } });
    expect(after.body.data.status).toBe('completed');
    const files = await h.request(`/api/v1/files?backup_id=${before.body.data.id}`, { token });
    expect(files.body.data.items.map((f: { path: string }) => f.path)).toEqual(['a.txt']);
  });

  it('turns 503 naming the database while PostgreSQL is stopped, and 200 once it is back, without a restart', async () => {
    expect(await statusWithin(h, '/readyz', 200)).toBe(200);
    await pg.suspend();
    try {
      const down = await h.request('/readyz');
      expect(down.status).toBe(503);
      expect(down.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { failing: ['database'], checks: { database: { status: 'failed' }, storage: { status: 'ok' } } } });
      expect((await h.request('/livez')).status).toBe(200);
    } finally {
      await pg.resume();
    }
    expect(await statusWithin(h, '/readyz', 200)).toBe(200);
  });
});

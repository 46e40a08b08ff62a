import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../store/postgres/index.ts';
import { JOB_CHANGES_SEEN_WITHIN_MS } from '../store/sql/jobs.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { startPostgres, type PostgresServer } from '../testing/services/postgres.ts';

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Two instances on one PostgreSQL, each caching the finished jobs it answers. */
describe('the cache of finished jobs across instances', () => {
  let pg: PostgresServer;
  let url: string;
  let dir: string;
  let a: Harness;
  let b: Harness;
  let token: string;
  beforeAll(async () => {
    pg = await startPostgres();
    url = await pg.createDatabase();
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'job-cache-')));
    // One data directory: the token signing key and the repositories are shared.
    a = await startHarness({ DATABASE_URL: url }, {}, dir);
    b = await startHarness({ DATABASE_URL: url }, {}, dir);
    token = await a.tokenFor(await a.newKey('business'));
    writeFileSync(join(a.root, 'file.txt'), 'contents\n');
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await pg?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const completedBackup = async (): Promise<string> => {
    const r = await a.request('/api/v1/backup', { method: 'POST', token, json: { source: a.root, destination: 'local' }, headers: { Prefer: 'wait=30' } });
    expect(r.body.data.status).toBe('completed');
    return r.body.data.id as string;
  };
  /** Both instances asked a few times, a version read apart: each then answers from its cache. */
  const readRepeatedly = async (id: string) => {
    for (let i = 0; i < 3; i++) {
      for (const h of [a, b]) expect((await h.request(`/api/v1/backup/${id}`, { token })).status).toBe(200);
      await wait(20);
    }
  };

  /** Asks all along `ms`, so the cache stays in use (a cache left idle past the bound is not used at all). */
  const keepAsking = async (id: string, ms: number) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      for (const h of [a, b]) await h.request(`/api/v1/backup/${id}`, { token });
      await wait(50);
    }
  };

  it('answers a backup deleted on one instance as missing on every instance once the deletion has answered', async () => {
    const id = await completedBackup();
    await readRepeatedly(id);
    expect((await b.request(`/api/v1/backup/${id}`, { method: 'DELETE', token })).status).toBe(200);
    for (const h of [a, b]) expect((await h.request(`/api/v1/backup/${id}`, { token })).status).toBe(404);
  });

  it('sees a change made outside every instance within the stated bound', async () => {
    const id = await completedBackup();
    await readRepeatedly(id);
    const outside = await openPostgresStore(url);
    try {
      // Deleted as an operator would, without waiting for the instances to notice.
      const accountId = (await outside.jobs.getBackup(id))!.accountId;
      expect(await outside.jobs.deleteBackup(id, accountId)).toMatchObject({ id });
    } finally {
      await outside.close();
    }
    await keepAsking(id, JOB_CHANGES_SEEN_WITHIN_MS);
    for (const h of [a, b]) expect((await h.request(`/api/v1/backup/${id}`, { token })).status).toBe(404);
  });
});

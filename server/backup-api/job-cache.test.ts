import { writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_CHANGES_SEEN_WITHIN_MS } from '../store/sql/jobs.ts';
import { startHarness, type Harness } from '../testing/harness.ts';

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Finished jobs are answered from a cache: what changes them must be seen (embedded SQLite, loopback HTTP). */
describe('the cache of finished jobs', () => {
  let h: Harness;
  let token: string;
  beforeAll(async () => {
    h = await startHarness();
    token = await h.tokenFor(await h.newKey('business'));
    writeFileSync(join(h.root, 'file.txt'), 'contents\n');
  });
  afterAll(() => h.cleanup());

  const completedBackup = async (): Promise<string> => {
    const r = await h.request('/api/v1/backup', { method: 'POST', token, json: { source: h.root, destination: 'local' }, headers: { Prefer: 'wait=30' } });
    expect(r.body.data.status).toBe('completed');
    return r.body.data.id as string;
  };
  /** Asked a few times, a version read apart: the job is then answered from the cache. */
  const readRepeatedly = async (id: string) => {
    for (let i = 0; i < 3; i++) {
      expect((await h.request(`/api/v1/backup/${id}`, { token })).status).toBe(200);
      await wait(20);
    }
  };

  /** Asks all along `ms`, so the cache stays in use (a cache left idle past the bound is not used at all). */
  const keepAsking = async (id: string, ms: number) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      await h.request(`/api/v1/backup/${id}`, { token });
      await wait(50);
    }
  };

  it('answers a backup deleted through the API as missing at once', async () => {
    const id = await completedBackup();
    await readRepeatedly(id);
    expect((await h.request(`/api/v1/backup/${id}`, { method: 'DELETE', token })).status).toBe(200);
    const after = await h.request(`/api/v1/backup/${id}`, { token });
    expect(after.status).toBe(404);
    expect(after.body.error.code).toBe('BACKUP_NOT_FOUND');
  });

  it('sees a change made outside the server (an operator\'s SQL) within the stated bound', async () => {
    const id = await completedBackup();
    await readRepeatedly(id);
    const raw = new DatabaseSync(join(h.dataDir, 'service.db'));
    try {
      raw.exec('PRAGMA busy_timeout = 5000');
      raw.prepare(`UPDATE backups SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?`).run(id);
    } finally {
      raw.close();
    }
    await keepAsking(id, JOB_CHANGES_SEEN_WITHIN_MS);
    expect((await h.request(`/api/v1/backup/${id}`, { token })).status).toBe(404);
  });

  it('keeps answering what it cached with the account check of every request', async () => {
    const id = await completedBackup();
    await readRepeatedly(id);
    const other = await h.tokenFor(await h.newKey('business'));
    const res = await h.request(`/api/v1/backup/${id}`, { token: other });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('BACKUP_NOT_FOUND');
  });
});

import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from './sqlite/index.ts';
import { storeSuite } from './suite.ts';

storeSuite('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'store-sqlite-'));
  return { open: async () => openSqliteStore(dir), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
});

describe('SQLite store on disk', () => {
  const dir = mkdtempSync(join(tmpdir(), 'store-sqlite-disk-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps its files 0600 in a 0700 directory, in WAL mode with synchronous=FULL', async () => {
    const data = join(dir, 'data');
    const store = openSqliteStore(data, { exclusive: true });
    await store.contacts.insert({ type: 'general', name: 'n', email: 'e@x.y', subject: 's', message: 'm', clientIp: null });
    expect(statSync(data).mode & 0o777).toBe(0o700);
    const files = readdirSync(data);
    expect(files).toEqual(expect.arrayContaining(['service.db', 'service.db-wal', 'service.db-shm', 'server.lock']));
    for (const name of files) expect({ name, mode: statSync(join(data, name)).mode & 0o777 }).toEqual({ name, mode: 0o600 });
    const raw = new DatabaseSync(join(data, 'service.db'));
    expect(raw.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    expect((raw.prepare('SELECT COUNT(*) AS n FROM schema_migrations').get() as { n: number }).n).toBe(3);
    raw.close();
    await store.close();
  });
});

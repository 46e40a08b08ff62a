import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import type { Sql } from './sql/executor.ts';
import { SqlFileStore } from './sql/files.ts';
import { openDatabase } from './sqlite/db.ts';
import { SqliteSql } from './sqlite/executor.ts';
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
    expect((raw.prepare('SELECT COUNT(*) AS n FROM schema_migrations').get() as { n: number }).n).toBe(5);
    raw.close();
    await store.close();
  });

  it('commits writes that arrive together in one group, answering each only once its row is committed', async () => {
    const data = join(dir, 'group');
    const store = openSqliteStore(data, { exclusive: true });
    // Another connection sees committed rows only: what it reads when a write is answered was committed.
    const other = new DatabaseSync(join(data, 'service.db'), { readOnly: true });
    const committed = (sql: string, id: string) => other.prepare(sql).get(id) !== undefined;
    const walFrames = () => statSync(join(data, 'service.db-wal')).size;
    try {
      await store.contacts.insert({ type: 'general', name: 'n', email: 'first@x.y', subject: 's', message: 'm', clientIp: null });
      const before = walFrames();
      const seen: boolean[] = [];
      const writes = Array.from({ length: 100 }, (_, i) =>
        i % 2 === 0
          ? store.contacts.insert({ type: 'general', name: `n${i}`, email: `c${i}@x.y`, subject: 's', message: 'm', clientIp: null }).then((m) => {
              seen.push(committed('SELECT id FROM contact_messages WHERE id = ?', m.id));
            })
          : store.newsletter.subscribe(`s${i}@x.y`, 'footer').then(({ subscriber, created }) => {
              expect(created).toBe(true);
              seen.push(committed('SELECT email FROM newsletter_subscribers WHERE email = ?', subscriber.email));
            }),
      );
      // A write that fails (a key of no account) fails alone; the group around it commits.
      const refused = store.accounts.insertKey({ id: 'key_orphan', accountId: 'acc_missing', secretHash: 'x' });
      await expect(refused).rejects.toThrow();
      await Promise.all(writes);
      expect(seen).toEqual(Array.from({ length: 100 }, () => true));
      expect(await store.contacts.count()).toBe(51);
      expect(await store.newsletter.count()).toBe(50);
      // One commit for the group: 100 separate commits would each append their pages to the WAL.
      const pageSize = (other.prepare('PRAGMA page_size').get() as { page_size: number }).page_size;
      expect(walFrames() - before).toBeLessThan(20 * (pageSize + 24));
    } finally {
      other.close();
      await store.close();
    }
    // Durable: a new process's connection reads every row.
    const reopened = new DatabaseSync(join(data, 'service.db'), { readOnly: true });
    expect((reopened.prepare('SELECT COUNT(*) AS n FROM contact_messages').get() as { n: number }).n).toBe(51);
    reopened.close();
  });

  it('inserts listings in a dozen statement texts at most, whatever the sizes of their batches (each is kept prepared)', async () => {
    const data = join(dir, 'shapes');
    const store = openSqliteStore(data);
    const { id: accountId } = await store.accounts.createAccount('pro');
    const job = { id: 'bkp_shapes', accountId, repository: `${accountId}/local`, source: '/s', destination: 'local', compression: 'zstd' as const, encryption: true, deduplication: true };
    await store.jobs.insertBackup(job, 100);
    await store.close();
    const file = join(data, 'service.db');
    const db = openDatabase(file);
    const texts = new Set<string>();
    const recording = (sql: Sql): Sql => ({
      dialect: sql.dialect,
      all: (q, p) => sql.all(q, p),
      get: (q, p) => sql.get(q, p),
      run: (q, p) => {
        texts.add(q);
        return sql.run(q, p);
      },
      transaction: (fn, options) => sql.transaction((tx) => fn(recording(tx)), options),
    });
    const files = new SqlFileStore(recording(new SqliteSql(db, file)));
    try {
      let n = 0;
      for (let size = 1; size <= 1200; size += 89) {
        await files.append(job.id, Array.from({ length: size }, () => ({ path: Buffer.from(`f${n++}`), type: 'file' as const, sizeBytes: 1, mode: 0o644, modifiedAt: '2024-05-01T10:00:00.000Z', sha256: null, linkTarget: null })));
      }
      expect(texts.size).toBeLessThanOrEqual(10); // 512 rows, and 256, 128, …, 1 for a batch's rest
      const rows = db.prepare('SELECT COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi FROM backup_entries WHERE backup_id = ?').get(job.id);
      expect(rows).toEqual({ n, lo: 0, hi: n - 1 });
    } finally {
      db.close();
    }
  });
});

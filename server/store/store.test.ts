import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { newId } from '../ids.ts';
import { Store } from './index.ts';
import { MIGRATIONS } from './migrations.ts';
import { tempStore } from './test-helpers.ts';

describe('Store', () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => cleanups.splice(0).forEach((c) => c()));
  function fresh() {
    const t = tempStore();
    cleanups.push(t.cleanup);
    return t;
  }

  it('opens a WAL database with foreign keys and records its migrations once', () => {
    const { store, dir } = fresh();
    expect((store.db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode).toBe('wal');
    expect((store.db.prepare('PRAGMA foreign_keys').get() as { foreign_keys: number }).foreign_keys).toBe(1);
    store.close();
    const again = Store.open(dir);
    const versions = again.db.prepare('SELECT version FROM schema_migrations').all();
    expect(versions).toHaveLength(MIGRATIONS.length);
    again.close();
  });

  it('enforces foreign keys and the plan check', () => {
    const { store } = fresh();
    expect(() => store.accounts.insertKey({ id: 'key_x', accountId: 'acc_missing', secretHash: 'h' })).toThrow(/FOREIGN KEY/);
    expect(() => store.db.prepare("INSERT INTO accounts (id, plan, created_at) VALUES ('a', 'gold', 'now')").run()).toThrow(/CHECK/);
  });

  it('stores keys with their account plan and revokes them', () => {
    const { store } = fresh();
    const account = store.accounts.createAccount('pro');
    store.accounts.insertKey({ id: 'key_1', accountId: account.id, secretHash: 'scrypt$x' });
    expect(store.accounts.getKey('key_1')).toMatchObject({ accountId: account.id, plan: 'pro', revokedAt: null });
    expect(store.accounts.revokeKey('key_1')).toBe(true);
    expect(store.accounts.getKey('key_1')?.revokedAt).toMatch(/^\d{4}-/);
    expect(store.accounts.revokeKey('key_nope')).toBe(false);
    expect(store.accounts.listKeys().map((k) => k.id)).toEqual(['key_1']);
  });

  it('scopes jobs to their account and guards state changes by status', () => {
    const { store } = fresh();
    const a = store.accounts.createAccount('free_trial');
    const b = store.accounts.createAccount('free_trial');
    const id = newId('bkp');
    const job = store.jobs.insertBackup({ id, accountId: a.id, source: '/x', destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
    expect(job).toMatchObject({ status: 'queued', encryption: true, error: null, progress: { filesDone: 0 } });
    expect(store.jobs.getBackup(id, a.id)?.id).toBe(id);
    expect(store.jobs.getBackup(id, b.id)).toBeUndefined();

    expect(store.jobs.markRunning('backup', id)).toBe(true);
    expect(store.jobs.markRunning('backup', id)).toBe(false);
    store.jobs.updateProgress('backup', id, { filesDone: 1, filesTotal: 2, bytesDone: 10, bytesTotal: 20 });
    expect(store.jobs.getBackup(id)?.progress).toEqual({ filesDone: 1, filesTotal: 2, bytesDone: 10, bytesTotal: 20 });
    expect(store.jobs.completeBackup(id, { snapshotId: 's1', filesBackedUp: 2, sizeBytes: 20, storedBytes: 9, progress: { filesDone: 2, filesTotal: 2, bytesDone: 20, bytesTotal: 20 } })).toBe(true);
    expect(store.jobs.finish('backup', id, 'cancelled', null)).toBe(false);
    expect(store.jobs.getBackup(id)).toMatchObject({ status: 'completed', snapshotId: 's1', storedBytes: 9 });
    expect(store.jobs.newestCompletedBackup(a.id)?.id).toBe(id);
    expect(store.jobs.newestCompletedBackup(b.id)).toBeUndefined();
  });

  it('pages backups newest first with a keyset cursor', () => {
    const { store } = fresh();
    const a = store.accounts.createAccount('pro');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = `bkp_${String(i).padStart(26, '0')}`;
      ids.push(id);
      store.jobs.insertBackup({ id, accountId: a.id, source: '/x', destination: 'cloud', compression: 'none', encryption: false, deduplication: false });
    }
    const first = store.jobs.listBackups(a.id, { limit: 2 });
    expect(first.map((j) => j.id)).toEqual([ids[4], ids[3]]);
    const second = store.jobs.listBackups(a.id, { limit: 2, before: first[1]!.id });
    expect(second.map((j) => j.id)).toEqual([ids[2], ids[1]]);
  });

  it('recovers: running becomes failed/INTERRUPTED, queued is returned for re-queueing', () => {
    const { store } = fresh();
    const a = store.accounts.createAccount('pro');
    const running = newId('bkp');
    const queued = newId('bkp');
    store.jobs.insertBackup({ id: running, accountId: a.id, source: '/x', destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
    store.jobs.insertBackup({ id: queued, accountId: a.id, source: '/x', destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
    store.jobs.markRunning('backup', running);
    expect(store.jobs.counts()).toEqual({ queued: 1, running: 1 });
    const r = store.jobs.recover();
    expect(r.interrupted).toEqual([running]);
    expect(r.queued).toEqual([{ kind: 'backup', id: queued }]);
    expect(store.jobs.getBackup(running)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
    expect(store.jobs.getBackup(running)?.finishedAt).not.toBeNull();
  });

  it('stores restore jobs with their path subset', () => {
    const { store } = fresh();
    const a = store.accounts.createAccount('pro');
    const b = newId('bkp');
    store.jobs.insertBackup({ id: b, accountId: a.id, source: '/x', destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
    const r = store.jobs.insertRestore({ id: newId('rst'), accountId: a.id, backupId: b, targetPath: '/t', paths: ['a/b.txt'], overwrite: 'never' });
    expect(r).toMatchObject({ backupId: b, paths: ['a/b.txt'], overwrite: 'never', status: 'queued' });
    expect(() => store.jobs.insertRestore({ id: newId('rst'), accountId: a.id, backupId: 'bkp_missing', targetPath: '/t', paths: null, overwrite: 'never' })).toThrow(/FOREIGN KEY/);
  });

  it('pages a file listing by path with prefix and cursor', () => {
    const { store } = fresh();
    const a = store.accounts.createAccount('pro');
    const b = newId('bkp');
    store.jobs.insertBackup({ id: b, accountId: a.id, source: '/x', destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
    const paths = ['docs', 'docs/a.txt', 'docs/b.txt', 'docs/ü.txt', 'docs/😀', 'docs/\uffff', 'img', 'img/p.png', 'readme', 'docs-old'];
    store.files.insertListing(b, paths.map((p) => ({ path: p, type: 'file', sizeBytes: 1, mode: 0o644, modifiedAt: '2024-01-01T00:00:00.000Z', sha256: null, linkTarget: null })));
    const all: string[] = [];
    let after: number | undefined;
    for (;;) {
      const page = store.files.page(b, { limit: 3, ...(after === undefined ? {} : { afterSeq: after }) });
      all.push(...page.items.map((f) => f.path));
      if (page.nextSeq === null) break;
      expect(page.items).toHaveLength(3);
      after = page.nextSeq;
    }
    // Byte order of UTF-8, as SQLite compares: U+FFFF sorts before the astral U+1F600.
    expect(all).toEqual(['docs', 'docs-old', 'docs/a.txt', 'docs/b.txt', 'docs/ü.txt', 'docs/\uffff', 'docs/😀', 'img', 'img/p.png', 'readme']);
    const prefixed = store.files.page(b, { limit: 10, prefix: 'docs/' });
    expect(prefixed.items.map((f) => f.path)).toEqual(['docs/a.txt', 'docs/b.txt', 'docs/ü.txt', 'docs/\uffff', 'docs/😀']);
    expect(prefixed.nextSeq).toBeNull();
    const first = store.files.page(b, { limit: 1, prefix: 'docs/' });
    expect(store.files.page(b, { limit: 1, prefix: 'docs/', afterSeq: first.nextSeq! }).items.map((f) => f.path)).toEqual(['docs/b.txt']);
    expect(store.files.matches(b, 'docs')).toBe(true);
    expect(store.files.matches(b, 'docs/a.txt')).toBe(true);
    expect(store.files.matches(b, 'doc')).toBe(false);
    expect(store.files.matches(b, 'img/p')).toBe(false);
  });

  it('never duplicates a newsletter subscriber, whatever the domain case', () => {
    const { store } = fresh();
    const first = store.newsletter.subscribe('Ann@Example.COM', 'footer');
    expect(first.created).toBe(true);
    expect(first.subscriber.email).toBe('Ann@example.com');
    const again = store.newsletter.subscribe('Ann@example.com', 'blog');
    expect(again.created).toBe(false);
    expect(again.subscriber.source).toBe('footer');
    expect((store.db.prepare('SELECT COUNT(*) AS n FROM newsletter_subscribers').get() as { n: number }).n).toBe(1);
  });

  it('keeps a contact message once the insert returns (read back through a second connection)', () => {
    const { store, dir } = fresh();
    const m = store.contacts.insert({ type: 'support', name: 'A', email: 'a@b.c', subject: 's', message: 'm', clientIp: '127.0.0.1' });
    expect(m.id).toMatch(/^msg_/);
    const other = new DatabaseSync(join(dir, 'service.db'));
    expect(other.prepare('SELECT type FROM contact_messages WHERE id = ?').get(m.id)).toEqual({ type: 'support' });
    other.close();
    expect((store.db.prepare('PRAGMA synchronous').get() as { synchronous: number }).synchronous).toBe(2);
  });
});

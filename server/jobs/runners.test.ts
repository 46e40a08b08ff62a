import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../ids.ts';
import { Store } from '../store/index.ts';
import { JobQueue } from './queue.ts';
import { repositoryDir } from './repositories.ts';
import { createJobRunner } from './runners.ts';

describe('job runners with the engine', () => {
  let base: string;
  let root: string;
  let store: Store;
  let queue: JobQueue;
  let accountId: string;

  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), 'runners-')));
    root = join(base, 'root');
    mkdirSync(join(root, 'src', 'sub'), { recursive: true });
    writeFileSync(join(root, 'src', 'a.txt'), 'hello\n');
    writeFileSync(join(root, 'src', 'sub', 'b.bin'), randomBytes(300_000));
    symlinkSync('a.txt', join(root, 'src', 'link'));
    store = Store.open(join(base, 'data'));
    accountId = store.accounts.createAccount('pro').id;
    const run = createJobRunner({ store, dataDir: join(base, 'data'), allowedRoots: [root], secret: { password: 'test-password' }, logger: pino({ level: 'silent' }), progressIntervalMs: 0 });
    queue = new JobQueue({ store, run, logger: pino({ level: 'silent' }), concurrency: 2 });
  });
  afterAll(async () => {
    await queue.close();
    store.close();
    rmSync(base, { recursive: true, force: true });
  });

  function addBackup(source: string) {
    const id = newId('bkp');
    store.jobs.insertBackup({ id, accountId, source, destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
    queue.enqueue('backup', id, `${accountId}/cloud`);
    return id;
  }

  it('backs up into the account repository, records the listing, and restores byte-identical files', async () => {
    const id = addBackup(join(root, 'src'));
    expect(await queue.waitSettled('backup', id, 30_000)).toBe(true);
    const job = store.jobs.getBackup(id)!;
    expect(job).toMatchObject({ status: 'completed', filesBackedUp: 3, sizeBytes: 300_006, error: null, warnings: { count: 0, items: [] } }); // 2 regular files and a symlink
    expect(job.storedBytes).toBeGreaterThan(0);
    expect(job.progress.filesDone).toBe(2);
    expect(job.startedAt).not.toBeNull();
    expect(job.finishedAt).not.toBeNull();
    const files = store.files.page(id, { limit: 100 }).items;
    expect(files.map((f) => [f.path, f.type])).toEqual([['a.txt', 'file'], ['link', 'symlink'], ['sub', 'directory'], ['sub/b.bin', 'file']]);
    expect(files[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(join(repositoryDir(join(base, 'data'), accountId, 'cloud'), 'config')).length).toBeGreaterThan(0);

    const rid = newId('rst');
    store.jobs.insertRestore({ id: rid, accountId, backupId: id, targetPath: join(root, 'restored'), paths: null, overwrite: 'never' });
    queue.enqueue('restore', rid, `${accountId}/cloud`);
    expect(await queue.waitSettled('restore', rid, 30_000)).toBe(true);
    expect(store.jobs.getRestore(rid)).toMatchObject({ status: 'completed', filesRestored: 3, filesSkipped: 0, sizeBytes: 300_006 }); // 2 files and a symlink
    expect(readFileSync(join(root, 'restored', 'sub', 'b.bin')).equals(readFileSync(join(root, 'src', 'sub', 'b.bin')))).toBe(true);
    expect(readFileSync(join(root, 'restored', 'a.txt'), 'utf8')).toBe('hello\n');
  });

  it('records what the backup left out as warnings, and lists and restores names that are not UTF-8 in their escaped form', async () => {
    const odd = join(root, 'odd');
    mkdirSync(odd);
    writeFileSync(Buffer.concat([Buffer.from(`${odd}/caf`), Uint8Array.of(0xe9), Buffer.from('.txt')]), 'latin-1 name');
    writeFileSync(join(odd, 'back\\slash'), 'backslash');
    execFileSync('mkfifo', [join(odd, 'pipe')]);
    const id = addBackup(odd);
    expect(await queue.waitSettled('backup', id, 30_000)).toBe(true);
    expect(store.jobs.getBackup(id)).toMatchObject({
      status: 'completed',
      filesBackedUp: 2,
      warnings: { count: 1, items: [{ path: 'pipe', reason: 'a FIFO: not backed up' }] },
    });
    expect(store.files.page(id, { limit: 10 }).items.map((f) => f.path)).toEqual(['back\\x5cslash', 'caf\\xe9.txt']);

    const rid = newId('rst');
    store.jobs.insertRestore({ id: rid, accountId, backupId: id, targetPath: join(root, 'odd-restored'), paths: ['caf\\xe9.txt'], overwrite: 'never' });
    queue.enqueue('restore', rid, `${accountId}/cloud`);
    expect(await queue.waitSettled('restore', rid, 30_000)).toBe(true);
    expect(store.jobs.getRestore(rid)).toMatchObject({ status: 'completed', filesRestored: 1, warnings: { count: 0, items: [] } });
    expect(readdirSync(join(root, 'odd-restored'), { encoding: 'buffer' })).toEqual([Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74])]);
  });

  it('fails a job whose source vanished before it ran with INVALID_SOURCE', async () => {
    const id = addBackup(join(root, 'gone'));
    expect(await queue.waitSettled('backup', id, 30_000)).toBe(true);
    expect(store.jobs.getBackup(id)).toMatchObject({ status: 'failed', error: { code: 'INVALID_SOURCE' } });
  });

  it('refuses at run time a source outside the roots', async () => {
    const id = addBackup(base);
    expect(await queue.waitSettled('backup', id, 30_000)).toBe(true);
    expect(store.jobs.getBackup(id)).toMatchObject({ status: 'failed', error: { code: 'SOURCE_NOT_ALLOWED' } });
  });

  it('refuses to restore into a target that is a file', async () => {
    const done = store.jobs.listBackups(accountId, { limit: 10, status: 'completed' })[0]!;
    const rid = newId('rst');
    store.jobs.insertRestore({ id: rid, accountId, backupId: done.id, targetPath: join(root, 'src', 'a.txt'), paths: null, overwrite: 'always' });
    queue.enqueue('restore', rid, `${accountId}/cloud`);
    expect(await queue.waitSettled('restore', rid, 30_000)).toBe(true);
    expect(store.jobs.getRestore(rid)).toMatchObject({ status: 'failed', error: { code: 'INVALID_TARGET' } });
  });

  it('records an unexpected engine failure as INTERNAL_ERROR without its internals', async () => {
    const wrong = createJobRunner({ store, dataDir: join(base, 'data'), allowedRoots: [root], secret: { password: 'not-the-password' }, logger: pino({ level: 'silent' }) });
    const id = newId('bkp');
    store.jobs.insertBackup({ id, accountId, source: join(root, 'src'), destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
    await wrong('backup', id, new AbortController().signal);
    const job = store.jobs.getBackup(id)!;
    expect(job).toMatchObject({ status: 'failed', error: { code: 'INTERNAL_ERROR' } });
    expect(job.error!.message).not.toMatch(/password|repositor|\//i);
  });
});

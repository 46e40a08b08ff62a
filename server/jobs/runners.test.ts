import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Destinations } from '../destinations/registry.ts';
import { loadDestinations } from '../destinations/settings.ts';
import { pathToText } from '../escaped-path.ts';
import { newId } from '../ids.ts';
import { RepositoryKeys } from '../keys/repository-keys.ts';
import type { Store } from '../store/index.ts';
import { openSqliteStore } from '../store/sqlite/index.ts';
import { LeasedJobQueue } from './leased-queue.ts';
import { createJobRunner } from './runners.ts';

describe('job runners with the engine', () => {
  let base: string;
  let root: string;
  let store: Store;
  let queue: LeasedJobQueue;
  let keys: RepositoryKeys;
  let accountId: string;
  const logger = pino({ level: 'silent' });

  beforeAll(async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), 'runners-')));
    root = join(base, 'root');
    mkdirSync(join(root, 'src', 'sub'), { recursive: true });
    writeFileSync(join(root, 'src', 'a.txt'), 'hello\n');
    writeFileSync(join(root, 'src', 'sub', 'b.bin'), randomBytes(300_000));
    symlinkSync('a.txt', join(root, 'src', 'link'));
    store = openSqliteStore(join(base, 'data'));
    accountId = (await store.accounts.createAccount('pro')).id;
    keys = new RepositoryKeys(store, randomBytes(32));
    const run = createJobRunner({ store, destinations: await Destinations.open(loadDestinations({}, join(base, 'data'))), dataDir: join(base, 'data'), allowedRoots: [root], keys, logger });
    queue = new LeasedJobQueue({ store, run, logger, concurrency: 2, accountCap: 2, queueLimit: 100, leaseMs: 30_000, sole: true, progressIntervalMs: 0 });
    await queue.start();
  });
  afterAll(async () => {
    await queue.close();
    await store.close();
    rmSync(base, { recursive: true, force: true });
  });

  async function addBackup(source: string, account = accountId) {
    const id = newId('bkp');
    await queue.submitBackup({ id, accountId: account, repository: `${account}/cloud`, source, destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
    return id;
  }
  async function addRestore(backupId: string, targetPath: string, overwrite: 'never' | 'always') {
    const id = newId('rst');
    await queue.submitRestore({ id, accountId, repository: `${accountId}/cloud`, backupId, targetPath, paths: null, overwrite });
    return id;
  }

  it('backs up into the account repository, records the listing, and restores byte-identical files', async () => {
    const id = await addBackup(join(root, 'src'));
    expect(await queue.waitSettled(id, 30_000)).toBe(true);
    const job = (await store.jobs.getBackup(id))!;
    expect(job).toMatchObject({ status: 'completed', filesBackedUp: 3, sizeBytes: 300_006, error: null, warnings: { count: 0, items: [] } }); // 2 regular files and a symlink
    expect(job.storedBytes).toBeGreaterThan(0);
    expect(job.progress.filesDone).toBe(2);
    expect(job.startedAt).not.toBeNull();
    expect(job.finishedAt).not.toBeNull();
    const files = (await store.files.page(id, { limit: 100 })).items;
    expect(files.map((f) => [Buffer.from(f.path).toString(), f.type])).toEqual([['a.txt', 'file'], ['link', 'symlink'], ['sub', 'directory'], ['sub/b.bin', 'file']]);
    expect(files[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(join(base, 'data', 'repositories', accountId, 'cloud', 'config')).length).toBeGreaterThan(0);

    const rid = await addRestore(id, join(root, 'restored'), 'never');
    expect(await queue.waitSettled(rid, 30_000)).toBe(true);
    expect(await store.jobs.getRestore(rid)).toMatchObject({ status: 'completed', filesRestored: 3, filesSkipped: 0, sizeBytes: 300_006 }); // 2 files and a symlink
    expect(readFileSync(join(root, 'restored', 'sub', 'b.bin')).equals(readFileSync(join(root, 'src', 'sub', 'b.bin')))).toBe(true);
    expect(readFileSync(join(root, 'restored', 'a.txt'), 'utf8')).toBe('hello\n');
  });

  it("never deduplicates across accounts: another account's backup of the same files stores them again, in a repository of its own", async () => {
    const other = (await store.accounts.createAccount('pro')).id;
    const again = await addBackup(join(root, 'src')); // the same account: nothing new to store
    const theirs = await addBackup(join(root, 'src'), other);
    expect(await queue.waitSettled(again, 30_000)).toBe(true);
    expect(await queue.waitSettled(theirs, 30_000)).toBe(true);
    expect((await store.jobs.getBackup(again))!.storedBytes).toBeLessThan(10_000);
    expect((await store.jobs.getBackup(theirs))!).toMatchObject({ status: 'completed', sizeBytes: 300_006 });
    expect((await store.jobs.getBackup(theirs))!.storedBytes).toBeGreaterThan(300_000); // the random file, stored whole
    expect(readFileSync(join(base, 'data', 'repositories', other, 'cloud', 'config')).length).toBeGreaterThan(0);
    const [mine, yours] = [await keys.get(accountId, 'cloud'), await keys.get(other, 'cloud')];
    expect(mine!.equals(yours!)).toBe(false);
  });

  it('records what the backup left out as warnings, and lists and restores names that are not UTF-8 in their escaped form', async () => {
    const odd = join(root, 'odd');
    mkdirSync(odd);
    writeFileSync(Buffer.concat([Buffer.from(`${odd}/caf`), Uint8Array.of(0xe9), Buffer.from('.txt')]), 'latin-1 name');
    writeFileSync(join(odd, 'back\\slash'), 'backslash');
    execFileSync('mkfifo', [join(odd, 'pipe')]);
    const id = await addBackup(odd);
    expect(await queue.waitSettled(id, 30_000)).toBe(true);
    expect(await store.jobs.getBackup(id)).toMatchObject({
      status: 'completed',
      filesBackedUp: 2,
      warnings: { count: 1, items: [{ path: 'pipe', reason: 'a FIFO: not backed up' }] },
    });
    expect((await store.files.page(id, { limit: 10 })).items.map((f) => pathToText(f.path))).toEqual(['back\\x5cslash', 'caf\\xe9.txt']);

    const rid = newId('rst');
    await queue.submitRestore({ id: rid, accountId, repository: `${accountId}/cloud`, backupId: id, targetPath: join(root, 'odd-restored'), paths: ['caf\\xe9.txt'], overwrite: 'never' });
    expect(await queue.waitSettled(rid, 30_000)).toBe(true);
    expect(await store.jobs.getRestore(rid)).toMatchObject({ status: 'completed', filesRestored: 1, warnings: { count: 0, items: [] } });
    expect(readdirSync(join(root, 'odd-restored'), { encoding: 'buffer' })).toEqual([Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74])]);
  });

  it('fails a job whose source vanished before it ran with INVALID_SOURCE', async () => {
    const id = await addBackup(join(root, 'gone'));
    expect(await queue.waitSettled(id, 30_000)).toBe(true);
    expect(await store.jobs.getBackup(id)).toMatchObject({ status: 'failed', error: { code: 'INVALID_SOURCE' } });
  });

  it('refuses at run time a source outside the roots', async () => {
    const id = await addBackup(base);
    expect(await queue.waitSettled(id, 30_000)).toBe(true);
    expect(await store.jobs.getBackup(id)).toMatchObject({ status: 'failed', error: { code: 'SOURCE_NOT_ALLOWED' } });
  });

  it('refuses to restore into a target that is a file', async () => {
    const done = (await store.jobs.listBackups(accountId, { limit: 10, status: 'completed' }))[0]!;
    const rid = await addRestore(done.id, join(root, 'src', 'a.txt'), 'always');
    expect(await queue.waitSettled(rid, 30_000)).toBe(true);
    expect(await store.jobs.getRestore(rid)).toMatchObject({ status: 'failed', error: { code: 'INVALID_TARGET' } });
  });

  it('records an unexpected engine failure as INTERNAL_ERROR without its internals', async () => {
    // Another master key cannot open this account's repository key: the job fails, and says nothing of why.
    const wrongKeys = new RepositoryKeys(store, randomBytes(32));
    const run = createJobRunner({ store, destinations: await Destinations.open(loadDestinations({}, join(base, 'data'))), dataDir: join(base, 'data'), allowedRoots: [root], keys: wrongKeys, logger });
    const other = new LeasedJobQueue({ store, run, logger, concurrency: 1, accountCap: 2, queueLimit: 100, leaseMs: 30_000, sole: false });
    await queue.close();
    await other.start();
    const id = newId('bkp');
    await other.submitBackup({ id, accountId, repository: `${accountId}/cloud`, source: join(root, 'src'), destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
    expect(await other.waitSettled(id, 30_000)).toBe(true);
    await other.close();
    const job = (await store.jobs.getBackup(id))!;
    expect(job).toMatchObject({ status: 'failed', error: { code: 'INTERNAL_ERROR' } });
    expect(job.error!.message).not.toMatch(/password|repositor|master|\//i);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../ids.ts';
import * as state from '../jobs/state.ts';
import { StoreUnavailableError } from './errors.ts';
import type { FileRecord, NewBackup, Plan } from './records.ts';
import type { Store } from './store.ts';

/** How a suite run gets its stores: every `open()` is another connection to one fresh database. */
export interface StoreFactory {
  open(): Promise<Store>;
  cleanup(): Promise<void>;
}

const CLAIM = { owner: 'inst_a', leaseMs: 60_000, accountCap: 2 };
const QUEUE_LIMIT = 100;

function entry(path: string | Uint8Array, type: FileRecord['type'] = 'file'): FileRecord {
  return {
    path: typeof path === 'string' ? Buffer.from(path) : path,
    type,
    sizeBytes: type === 'file' ? 3 : 0,
    mode: 0o644,
    modifiedAt: '2024-05-01T10:00:00.000Z',
    sha256: type === 'file' ? 'a'.repeat(64) : null,
    linkTarget: type === 'symlink' ? Buffer.from([0x74, 0xff]) : null,
  };
}

const text = (b: Uint8Array): string => Buffer.from(b).toString('latin1');

/**
 * The conformance suite every Store implementation passes (as restic's backend suite: one set of
 * tests, every implementation). Status changes go through the job state machine, the only
 * caller of the store's compare-and-set.
 */
export function storeSuite(name: string, factory: () => Promise<StoreFactory>): void {
  describe(`Store: ${name}`, () => {
    let f: StoreFactory;
    let store: Store;
    const opened: Store[] = [];
    const open = async (): Promise<Store> => {
      const s = await f.open();
      opened.push(s);
      return s;
    };
    beforeAll(async () => {
      f = await factory();
      store = await open();
    });
    afterAll(async () => {
      for (const s of opened) await s.close();
      await f?.cleanup();
    });

    const account = async (plan: Plan = 'pro') => (await store.accounts.createAccount(plan)).id;
    const backup = (accountId: string, over: Partial<NewBackup> = {}): NewBackup => ({
      id: newId('bkp'),
      accountId,
      repository: `${accountId}/cloud`,
      source: '/src',
      destination: 'cloud',
      compression: 'zstd',
      encryption: true,
      deduplication: true,
      ...over,
    });
    const queued = async (accountId: string, over: Partial<NewBackup> = {}) => (await store.jobs.insertBackup(backup(accountId, over), QUEUE_LIMIT))!;
    const completed = async (accountId: string, files: FileRecord[] = []) => {
      const job = await queued(accountId, { repository: `${accountId}/${newId('bkp')}` });
      expect(await state.start(store, job, CLAIM)).toBe(true);
      await store.files.append(job.id, files);
      await store.files.settle();
      const progress = { filesDone: 1, filesTotal: 1, bytesDone: 3, bytesTotal: 3 };
      const result = { snapshotId: 's'.repeat(64), filesBackedUp: files.length, sizeBytes: 3, storedBytes: 2 };
      expect(await state.complete(store, job, CLAIM.owner, { result, progress, warnings: { count: 0, items: [] } })).toBe(true);
      return job;
    };

    it('reopens its migrated database without migrating again, and answers the health check', async () => {
      const again = await open();
      await again.ping();
      const id = await account('business');
      expect(await again.accounts.getAccount(id)).toMatchObject({ id, plan: 'business' });
    });

    it('keeps accounts and keys with their plan; revokes once; refuses a key of a missing account', async () => {
      const id = await account('pro');
      await store.accounts.insertKey({ id: 'key_suite1', accountId: id, secretHash: 'scrypt$x' });
      expect(await store.accounts.getKey('key_suite1')).toMatchObject({ accountId: id, plan: 'pro', revokedAt: null, label: null });
      await store.accounts.setPlan(id, 'business');
      expect((await store.accounts.getKey('key_suite1'))?.plan).toBe('business');
      await store.accounts.updateKeySecret('key_suite1', 'scrypt$y');
      expect((await store.accounts.getKey('key_suite1'))?.secretHash).toBe('scrypt$y');
      expect(await store.accounts.revokeKey('key_suite1', new Date('2024-01-01T00:00:00Z'))).toBe(true);
      expect(await store.accounts.revokeKey('key_suite1')).toBe(true);
      expect((await store.accounts.getKey('key_suite1'))?.revokedAt).toBe('2024-01-01T00:00:00.000Z');
      expect(await store.accounts.revokeKey('key_nope')).toBe(false);
      await expect(store.accounts.insertKey({ id: 'key_orphan', accountId: 'acc_missing', secretHash: 'h' })).rejects.toThrow();
      expect(await store.accounts.getKey('key_orphan')).toBeUndefined();
      expect((await store.accounts.listKeys()).map((k) => k.id)).toContain('key_suite1');
    });

    it('creates an account with its first key in one transaction (nothing when the key fails)', async () => {
      const before = await store.accounts.countKeys();
      const made = await store.accounts.createAccountWithKey('free_trial', { id: 'key_suite2', secretHash: 'h', label: 'dev' });
      expect(await store.accounts.getKey('key_suite2')).toMatchObject({ accountId: made.id, label: 'dev', plan: 'free_trial' });
      await expect(store.accounts.createAccountWithKey('pro', { id: 'key_suite2', secretHash: 'h', label: null })).rejects.toThrow();
      expect(await store.accounts.countKeys()).toBe(before + 1);
    });

    it('scopes jobs to their account, pages backups newest first, and refuses beyond the queue limit', async () => {
      const a = await account();
      const b = await account();
      const ids: string[] = [];
      // Ids sort by creation time to the millisecond; these are made in order.
      for (let i = 0; i < 5; i++) ids.push((await queued(a, { id: `bkp_0${newId('bkp').slice(5, 15)}${String(i).padStart(15, '0')}` })).id);
      const job = (await store.jobs.getBackup(ids[0]!, a))!;
      expect(job).toMatchObject({ kind: 'backup', status: 'queued', encryption: true, deduplication: true, error: null, progress: { filesDone: 0 }, warnings: { count: 0, items: [] } });
      expect(job.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(await store.jobs.getBackup(ids[0]!, b)).toBeUndefined();
      expect(await store.jobs.getRestore(ids[0]!)).toBeUndefined();
      expect((await store.jobs.get(ids[0]!))?.kind).toBe('backup');
      const first = await store.jobs.listBackups(a, { limit: 2 });
      expect(first.map((j) => j.id)).toEqual([ids[4], ids[3]]);
      expect((await store.jobs.listBackups(a, { limit: 2, before: first[1]!.id })).map((j) => j.id)).toEqual([ids[2], ids[1]]);
      expect(await store.jobs.listBackups(a, { limit: 10, status: 'completed' })).toEqual([]);

      const limited = await account();
      expect(await store.jobs.insertBackup(backup(limited), 2)).not.toBeNull();
      expect(await store.jobs.insertBackup(backup(limited), 2)).not.toBeNull();
      const refused = backup(limited);
      expect(await store.jobs.insertBackup(refused, 2)).toBeNull();
      expect(await store.jobs.get(refused.id)).toBeUndefined();
    });

    it('moves jobs only along the state machine, each step once', async () => {
      const a = await account();
      const job = await queued(a);
      expect(await state.complete(store, job, CLAIM.owner, { result: { snapshotId: 'x', filesBackedUp: 0, sizeBytes: 0, storedBytes: 0 }, progress: job.progress, warnings: job.warnings })).toBe(false);
      expect(await state.start(store, job, CLAIM)).toBe(true);
      expect(await state.start(store, job, CLAIM)).toBe(false);
      const running = (await store.jobs.getBackup(job.id))!;
      expect(running.status).toBe('running');
      expect(running.startedAt).not.toBeNull();
      await store.jobs.updateProgress(job.id, 'inst_other', { filesDone: 9, filesTotal: 9, bytesDone: 9, bytesTotal: 9 });
      await store.jobs.updateProgress(job.id, CLAIM.owner, { filesDone: 1, filesTotal: 2, bytesDone: 10, bytesTotal: 20 });
      expect((await store.jobs.getBackup(job.id))?.progress).toEqual({ filesDone: 1, filesTotal: 2, bytesDone: 10, bytesTotal: 20 });
      expect(await state.fail(store, job, 'inst_other', { code: 'X', message: 'not the holder' })).toBe(false);
      expect(await state.cancel(store, job, null)).toBe(false); // running: only its holder cancels
      const warnings = { count: 101, items: Array.from({ length: 101 }, (_, i) => ({ path: `f${i}`, reason: 'unreadable' })) };
      const result = { snapshotId: 's1', filesBackedUp: 2, sizeBytes: 20, storedBytes: 9 };
      expect(await state.complete(store, job, CLAIM.owner, { result, progress: { filesDone: 2, filesTotal: 2, bytesDone: 20, bytesTotal: 20 }, warnings })).toBe(true);
      const done = (await store.jobs.getBackup(job.id))!;
      expect(done).toMatchObject({ status: 'completed', snapshotId: 's1', filesBackedUp: 2, storedBytes: 9, error: null, progress: { filesDone: 2 } });
      expect(done.warnings.count).toBe(101);
      expect(done.warnings.items).toHaveLength(100);
      expect(done.finishedAt).not.toBeNull();
      expect(await state.interrupt(store, job, { anyHolder: true })).toBe(false);
      expect(await state.cancel(store, job, CLAIM.owner)).toBe(false);
      expect((await store.jobs.newestCompletedBackup(a))?.id).toBe(job.id);

      const other = await queued(a);
      expect(await state.cancel(store, other, null)).toBe(true);
      expect(await store.jobs.getBackup(other.id)).toMatchObject({ status: 'cancelled', error: null });
      expect((await store.jobs.getBackup(other.id))?.finishedAt).not.toBeNull();
    });

    it('keeps one queued or running maintenance job per repository, its phase, and its result also when it failed', async () => {
      const a = await account();
      const job = (n: string) => ({ id: newId('mnt'), accountId: a, repository: `${a}/cloud#maintenance`, operation: 'prune' as const, destination: 'cloud', trigger: 'request' as const, dryRun: n === 'dry', readData: false, readDataSubset: null });
      const first = (await store.jobs.insertMaintenance(job('dry'), QUEUE_LIMIT))!;
      expect(first.inserted).toBe(true);
      expect(first.job).toMatchObject({ kind: 'maintenance', operation: 'prune', status: 'queued', dryRun: true, phase: null, outcome: null });
      const again = (await store.jobs.insertMaintenance(job('real'), QUEUE_LIMIT))!;
      expect(again).toMatchObject({ inserted: false, job: { id: first.job.id } });
      expect((await store.jobs.get(first.job.id))?.kind).toBe('maintenance');
      expect(await store.jobs.getMaintenance(first.job.id, (await account()))).toBeUndefined();

      expect(await state.start(store, first.job, CLAIM)).toBe(true);
      await store.jobs.updatePhase(first.job.id, 'inst_other', 'deleting');
      await store.jobs.updatePhase(first.job.id, CLAIM.owner, 'marking');
      expect((await store.jobs.getMaintenance(first.job.id))?.phase).toBe('marking');
      const outcome = { dry_run: true, bytes_deleted: 12345678901 };
      expect(await state.complete(store, first.job, CLAIM.owner, { result: { outcome }, progress: first.job.progress, warnings: first.job.warnings })).toBe(true);
      expect((await store.jobs.getMaintenance(first.job.id))?.outcome).toEqual(outcome);
      expect((await store.jobs.lastPruneDryRun(a, 'cloud'))?.id).toBe(first.job.id);
      expect(await store.jobs.lastPruneDryRun(a, 'local')).toBeUndefined();

      const check = (await store.jobs.insertMaintenance({ ...job('real'), operation: 'check', readDataSubset: '10%' }, QUEUE_LIMIT))!;
      expect(check.inserted).toBe(true);
      await state.start(store, check.job, CLAIM);
      const found = { ok: false, affected: [{ backup_id: null, paths: ['a'] }] };
      expect(await state.fail(store, check.job, CLAIM.owner, { code: 'CORRUPT_DATA', message: 'damaged' }, undefined, { outcome: found })).toBe(true);
      expect(await store.jobs.getMaintenance(check.job.id)).toMatchObject({ status: 'failed', operation: 'check', readDataSubset: '10%', outcome: found, error: { code: 'CORRUPT_DATA' } });
    });

    it('deletes only final backups: they appear nowhere after, their listing is dropped, their restores stay', async () => {
      const a = await account();
      const done = await completed(a, [entry('x')]);
      const restore = { id: newId('rst'), accountId: a, repository: done.repository, backupId: done.id, targetPath: '/t', paths: null, overwrite: 'never' as const };
      await store.jobs.insertRestore(restore, QUEUE_LIMIT);
      const running = await queued(a);
      await state.start(store, running, CLAIM);
      expect(await store.jobs.deleteBackup(running.id, a)).toBe('running');
      expect(await store.jobs.deleteBackup(done.id, await account())).toBeUndefined();
      expect((await store.jobs.completedBackups(a, {})).map((b) => b.id)).toEqual([done.id]);
      expect((await store.jobs.completedBackups(a, { destination: 'local' })).map((b) => b.id)).toEqual([]);
      expect(await store.jobs.deleteBackup(done.id, a)).toMatchObject({ id: done.id, status: 'completed' });
      expect(await store.jobs.getBackup(done.id, a)).toBeUndefined();
      expect(await store.jobs.deleteBackup(done.id, a)).toBeUndefined();
      expect(await store.jobs.completedBackups(a, {})).toEqual([]);
      expect((await store.jobs.listBackups(a, { limit: 10 })).map((b) => b.id)).toEqual([running.id]);
      expect((await store.files.page(done.id, { limit: 10 })).items).toEqual([]);
      expect((await store.jobs.getRestore(restore.id))?.backupId).toBe(done.id);
    });

    it('records INTERRUPTED once, and a backup that did not complete keeps no listing', async () => {
      const a = await account();
      const job = await queued(a);
      await state.start(store, job, CLAIM);
      await store.files.append(job.id, [entry('a'), entry('b')]);
      const [x, y] = await Promise.all([state.interrupt(store, job, { anyHolder: true }), state.interrupt(store, job, { anyHolder: true })]);
      expect([x, y].sort()).toEqual([false, true]);
      expect(await store.jobs.getBackup(job.id)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
      expect((await store.files.page(job.id, { limit: 10 })).items).toEqual([]);
    });

    it('tells the observer of each change the caller made, before waiters hear of it; of a race, only the winner', async () => {
      const told: string[] = [];
      const observer: state.StatusObserver = async (ref, to) => void told.push(`${ref.id} ${to}`);
      const heard: string[] = [];
      const unsubscribe = store.events.subscribe((e) => {
        if (e.type === 'settled' && told.some((t) => t.startsWith(e.id))) heard.push(`${e.id} told ${told.filter((t) => t.startsWith(e.id)).length}`);
      });
      const a = await account();
      const job = await queued(a);
      const other = await open();
      const claims = await Promise.all([state.start(store, job, CLAIM, observer), state.start(other, job, { ...CLAIM, owner: 'inst_b' }, observer)]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      const races = await Promise.all([0, 1].map(() => state.interrupt(store, job, { anyHolder: true }, observer)));
      expect(races.filter(Boolean)).toHaveLength(1);
      expect(await state.cancel(store, job, null, observer)).toBe(false);
      const cancelled = await queued(a);
      expect(await state.cancel(store, cancelled, null, observer)).toBe(true);
      for (let i = 0; i < 100 && heard.length < 2; i++) await new Promise((r) => setTimeout(r, 50)); // notifications between connections are asynchronous
      unsubscribe();
      expect(told).toEqual([`${job.id} running`, `${job.id} failed`, `${cancelled.id} cancelled`]);
      expect(heard).toEqual([`${job.id} told 2`, `${cancelled.id} told 1`]);
    });

    it('sums up jobs for monitoring: counts, the oldest queued job, per destination the newest completed backup and its bytes', async () => {
      const before = await store.jobs.summary();
      const a = await account();
      const destination = `dest${newId('bkp').slice(4)}`;
      const waiting = await queued(a, { destination, repository: `${a}/${destination}-queued` });
      const finished: string[] = [];
      for (const storedBytes of [5, 7]) {
        const job = await queued(a, { destination, repository: `${a}/${destination}-${storedBytes}` });
        expect(await state.start(store, job, CLAIM)).toBe(true);
        const result = { snapshotId: 's'.repeat(64), filesBackedUp: 1, sizeBytes: 10, storedBytes };
        expect(await state.complete(store, job, CLAIM.owner, { result, progress: job.progress, warnings: job.warnings })).toBe(true);
        finished.push((await store.jobs.getBackup(job.id))!.finishedAt!);
      }
      const failed = await queued(a, { destination, repository: `${a}/${destination}-failed` });
      await state.start(store, failed, CLAIM);
      await state.fail(store, failed, CLAIM.owner, { code: 'X', message: 'failed' });

      const after = await store.jobs.summary();
      expect(after.queued - before.queued).toBe(1);
      expect(after.running).toBe(before.running);
      expect(Date.parse(after.oldestQueuedAt!)).toBeLessThanOrEqual(Date.parse(waiting.createdAt));
      expect(after.destinations.find((d) => d.destination === destination)).toEqual({ destination, lastCompletedAt: finished.sort().at(-1), storedBytes: 12 });
      expect(before.destinations.find((d) => d.destination === destination)).toBeUndefined();
    });

    it('claims one job per repository and at most the account cap, whoever races for them', async () => {
      const a = await account();
      const other = await open();
      const same = [await queued(a), await queued(a)];
      const results = await Promise.all([state.start(store, same[0]!, CLAIM), state.start(other, same[1]!, { ...CLAIM, owner: 'inst_b' })]);
      expect(results.filter(Boolean)).toHaveLength(1);
      const capped = await account();
      const jobs = await Promise.all([0, 1, 2].map((i) => queued(capped, { repository: `${capped}/r${i}` })));
      const claims = await Promise.all(jobs.map((j, i) => state.start(i % 2 ? other : store, j, { ...CLAIM, accountCap: 2 })));
      expect(claims.filter(Boolean)).toHaveLength(2);
    });

    it('offers each free repository its oldest queued job, with how busy each account is', async () => {
      const a = await account();
      const b = await account();
      const a1 = await queued(a);
      const a2 = await queued(a);
      const b1 = await queued(b);
      const mine = (await store.jobs.candidates()).filter((c) => c.accountId === a || c.accountId === b);
      expect(mine.map((c) => c.id).sort()).toEqual([a1.id, b1.id].sort());
      expect(mine.find((c) => c.id === a1.id)).toMatchObject({ kind: 'backup', repository: `${a}/cloud`, accountRunning: 0, accountLastStartedAt: null });
      await state.start(store, a1, CLAIM);
      const after = (await store.jobs.candidates()).filter((c) => c.accountId === a || c.accountId === b);
      expect(after.map((c) => c.id)).toEqual([b1.id]); // a's repository is busy: a2 waits behind a1
      const other = await queued(a, { repository: `${a}/local` });
      const withLocal = (await store.jobs.candidates()).find((c) => c.id === other.id)!;
      expect(withLocal.accountRunning).toBe(1);
      expect(withLocal.accountLastStartedAt).not.toBeNull();
      expect(a2.id).not.toBe(other.id);
    });

    it('renews leases its holder still has, reports cancel requests, and finds lapsed leases', async () => {
      const a = await account();
      const job = await queued(a);
      expect(await state.start(store, job, { ...CLAIM, leaseMs: 300 })).toBe(true);
      expect(await store.jobs.requestCancel(job.id)).toBe(true);
      expect(await store.jobs.renewLeases('inst_other', [job.id], 300)).toEqual({ held: [], cancelRequested: [] });
      expect(await store.jobs.renewLeases(CLAIM.owner, [job.id], 300)).toEqual({ held: [job.id], cancelRequested: [job.id] });
      expect(await store.jobs.renewLeases(CLAIM.owner, [], 300)).toEqual({ held: [], cancelRequested: [] });
      expect(await state.interrupt(store, job, { leaseExpired: true })).toBe(false);
      await new Promise((r) => setTimeout(r, 450));
      expect((await store.jobs.expired()).map((r) => r.id)).toContain(job.id);
      expect((await store.jobs.running()).map((r) => r.id)).toContain(job.id);
      expect(await state.interrupt(store, job, { leaseExpired: true })).toBe(true);
      expect((await store.jobs.expired()).map((r) => r.id)).not.toContain(job.id);
      const queuedJob = await queued(a);
      expect(await store.jobs.requestCancel(queuedJob.id)).toBe(false);
    });

    it('keeps restore jobs with their path subset, on the repository of their backup', async () => {
      const a = await account();
      const source = await completed(a);
      const r = await store.jobs.insertRestore(
        { id: newId('rst'), accountId: a, repository: source.repository, backupId: source.id, targetPath: '/t', paths: ['a/b.txt', 'x\\x5cy'], overwrite: 'never' },
        QUEUE_LIMIT,
      );
      expect(r).toMatchObject({ kind: 'restore', backupId: source.id, paths: ['a/b.txt', 'x\\x5cy'], overwrite: 'never', status: 'queued', repository: source.repository });
      expect(await state.start(store, r!, CLAIM)).toBe(true);
      expect(await state.complete(store, r!, CLAIM.owner, { result: { filesRestored: 3, filesSkipped: 1, sizeBytes: 7 }, progress: r!.progress, warnings: r!.warnings })).toBe(true);
      expect(await store.jobs.getRestore(r!.id)).toMatchObject({ status: 'completed', filesRestored: 3, filesSkipped: 1, sizeBytes: 7 });
      expect((await store.jobs.get(r!.id))?.kind).toBe('restore');
    });

    it('pages a listing in byte order of path, by prefix, whatever the bytes and lengths', async () => {
      const a = await account();
      const long = 'd/' + 'x'.repeat(3000);
      const paths: Array<string | Uint8Array> = [
        'docs', 'docs/a.txt', 'docs/b.txt', 'docs/ü.txt', 'docs/😀', 'docs/\uffff', 'img', 'img/p.png', 'readme', 'docs-old',
        Buffer.from([0x64, 0x6f, 0x63, 0x73, 0x2f, 0xff, 0xfe]), `${long}/b`, `${long}/a`, `${long}a`, 'd', 'link',
      ];
      const typeOf = (p: string | Uint8Array): FileRecord['type'] => (p === 'docs' || p === 'img' || p === 'd' ? 'directory' : p === 'link' ? 'symlink' : 'file');
      const job = await completed(a, []);
      // Appended in batches, in walk order (not byte order).
      await store.files.append(job.id, paths.slice(0, 6).map((p) => entry(p, typeOf(p))));
      await store.files.append(job.id, paths.slice(6).map((p) => entry(p, typeOf(p))));
      const expected = paths.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))).sort(Buffer.compare).map(text);
      const all: string[] = [];
      let after: number | undefined;
      for (;;) {
        const page = await store.files.page(job.id, { limit: 4, ...(after === undefined ? {} : { after }) });
        all.push(...page.items.map((f) => text(f.path)));
        if (page.next === null) break;
        expect(page.items).toHaveLength(4);
        after = page.next;
      }
      expect(all).toEqual(expected);
      const docs = await store.files.page(job.id, { limit: 10, prefix: Buffer.from('docs/') });
      expect(docs.items.map((f) => text(f.path))).toEqual(expected.filter((p) => p.startsWith('docs/')));
      expect(docs.next).toBeNull();
      const first = await store.files.page(job.id, { limit: 1, prefix: Buffer.from('docs/') });
      expect((await store.files.page(job.id, { limit: 1, prefix: Buffer.from('docs/'), after: first.next! })).items.map((f) => text(f.path))).toEqual([expected.filter((p) => p.startsWith('docs/'))[1]]);
      const longPage = await store.files.page(job.id, { limit: 10, prefix: Buffer.from(`${long}/`) });
      expect(longPage.items.map((f) => text(f.path))).toEqual([`${long}/a`, `${long}/b`]);
      const [img] = (await store.files.page(job.id, { limit: 10, prefix: Buffer.from('img') })).items;
      expect({ ...img, path: text(img!.path) }).toEqual({ ...entry('img', 'directory'), path: 'img' });
      const [link] = (await store.files.page(job.id, { limit: 1, prefix: Buffer.from('link') })).items;
      expect(link).toMatchObject({ type: 'symlink', sizeBytes: 0, sha256: null });
      expect(Buffer.from(link!.linkTarget!)).toEqual(Buffer.from([0x74, 0xff]));
      expect(await store.files.matches(job.id, Buffer.from('docs'))).toBe(true);
      expect(await store.files.matches(job.id, Buffer.from('docs/a.txt'))).toBe(true);
      expect(await store.files.matches(job.id, Buffer.from(long))).toBe(true);
      expect(await store.files.matches(job.id, Buffer.from('doc'))).toBe(false);
      expect(await store.files.matches(job.id, Buffer.from('img/p'))).toBe(false);
    });

    it('pages a listing of thousands of entries appended in batches, each entry once', async () => {
      const a = await account();
      const job = await completed(a, []);
      const names: string[] = [];
      for (let d = 0; d < 30; d++) for (let i = 0; i < 100; i++) names.push(`dir${d}/file-${String(i).padStart(3, '0')}.txt`);
      for (let at = 0; at < names.length; at += 700) await store.files.append(job.id, names.slice(at, at + 700).map((n) => entry(n)));
      const seen: string[] = [];
      let after: number | undefined;
      for (;;) {
        const page = await store.files.page(job.id, { limit: 250, ...(after === undefined ? {} : { after }) });
        seen.push(...page.items.map((f) => text(f.path)));
        if (page.next === null) break;
        after = page.next;
      }
      expect(seen).toEqual([...names].sort());
      expect((await store.files.page(job.id, { limit: 1000, prefix: Buffer.from('dir7/') })).items).toHaveLength(100);
    });

    it('subscribes a newsletter address once, whatever the case of its domain, and keeps contact messages', async () => {
      const first = await store.newsletter.subscribe('Ann@Example.COM', 'footer');
      expect(first).toMatchObject({ created: true, subscriber: { email: 'Ann@example.com', source: 'footer', status: 'subscribed' } });
      const again = await store.newsletter.subscribe('Ann@example.com', 'blog');
      expect(again).toMatchObject({ created: false, subscriber: { source: 'footer' } });
      expect(again.subscriber.subscribedAt).toBe(first.subscriber.subscribedAt);
      const before = await store.contacts.count();
      const m = await store.contacts.insert({ type: 'support', name: 'A', email: 'a@b.c', subject: 's', message: 'm', clientIp: '127.0.0.1' });
      expect(m.id).toMatch(/^msg_/);
      expect(m.type).toBe('support');
      expect(await (await open()).contacts.count()).toBe(before + 1);
      expect(await (await open()).contacts.get(m.id)).toEqual({ id: m.id, type: 'support', name: 'A', email: 'a@b.c', subject: 's', message: 'm', clientIp: '127.0.0.1', receivedAt: m.receivedAt });
      expect(await store.contacts.get('msg_missing')).toBeUndefined();
    });

    it('keeps one key per repository, first writer wins; fingerprints likewise; rotation rewraps all or nothing', async () => {
      const a = await account();
      const kept = await store.keys.insertRepositoryKey({ accountId: a, destination: 'cloud', wrapped: Buffer.from('one') });
      expect(Buffer.from(kept).toString()).toBe('one');
      const again = await store.keys.insertRepositoryKey({ accountId: a, destination: 'cloud', wrapped: Buffer.from('two') });
      expect(Buffer.from(again).toString()).toBe('one');
      expect(await store.keys.repositoryKey(a, 'local')).toBeUndefined();
      expect(await store.keys.fingerprint('test-secret', 'fp1')).toBe('fp1');
      expect(await store.keys.fingerprint('test-secret', 'fp2')).toBe('fp1');

      const master = await store.keys.fingerprint('master-key', 'm1');
      expect(await store.keys.rotateMaster('wrong', 'm2', (k) => k.wrapped)).toBe(false);
      const count = await store.keys.countRepositoryKeys();
      let rewrapped = 0;
      expect(
        await store.keys.rotateMaster(master, 'm2', (k) => {
          rewrapped++;
          return Buffer.concat([Buffer.from('r:'), k.wrapped]);
        }),
      ).toBe(true);
      expect(rewrapped).toBe(count);
      expect(Buffer.from((await store.keys.repositoryKey(a, 'cloud'))!).toString()).toBe('r:one');
      expect(await store.keys.fingerprint('master-key', 'ignored')).toBe('m2');
      await expect(store.keys.rotateMaster('m2', 'm3', () => {
        throw new Error('rewrap failed');
      })).rejects.toThrow('rewrap failed');
      expect(await store.keys.fingerprint('master-key', 'ignored')).toBe('m2');
      expect(Buffer.from((await store.keys.repositoryKey(a, 'cloud'))!).toString()).toBe('r:one');
    });

    it('delivers job events to subscribers', async () => {
      const got: unknown[] = [];
      const off = store.events.subscribe((e) => got.push(e));
      await store.events.publish({ type: 'queued', id: 'bkp_x' });
      for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      off();
      expect(got).toContainEqual({ type: 'queued', id: 'bkp_x' });
    });

    it('fails with StoreUnavailableError once closed', async () => {
      const closing = await open();
      await closing.close();
      await expect(closing.accounts.countKeys()).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(closing.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    });
  });
}

import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newId } from '../ids.ts';
import type { StoreFactory } from '../store/suite.ts';
import type { Job, NewBackup, Store } from '../store/index.ts';
import { LeasedJobQueue, type LeasedQueueOptions } from './leased-queue.ts';
import { JobFailure, type JobOutcome, type JobRunner } from './queue.ts';

const logger = pino({ level: 'silent' });
const LEASE_MS = 2000;
const OUTCOME: JobOutcome = {
  result: { snapshotId: 's', filesBackedUp: 0, sizeBytes: 0, storedBytes: 0 },
  progress: { filesDone: 0, filesTotal: 0, bytesDone: 0, bytesTotal: 0 },
  warnings: { count: 0, items: [] },
};

const until = async (what: string, ok: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/**
 * A runner whose jobs run until the test releases them (or their signal aborts them), recording
 * what ran, where, and how many at once per repository.
 */
function gatedRunner(instance: string, log: { started: string[]; where: Map<string, string>; active: Map<string, number>; overlap: number }) {
  const gates = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  const run: JobRunner = async (job: Job, context) => {
    log.started.push(job.id);
    log.where.set(job.id, instance);
    const busy = (log.active.get(job.repository) ?? 0) + 1;
    log.active.set(job.repository, busy);
    log.overlap = Math.max(log.overlap, busy);
    try {
      await new Promise<void>((resolve, reject) => {
        gates.set(job.id, { resolve, reject });
        context.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      });
      return OUTCOME;
    } finally {
      log.active.set(job.repository, log.active.get(job.repository)! - 1);
    }
  };
  return { run, release: (id: string) => gates.get(id)?.resolve(), fail: (id: string, e: Error) => gates.get(id)?.reject(e) };
}

/** The suite every JobQueue shape passes: the same queue on each store, one or two instances, a fresh database each test. */
export function queueSuite(name: string, factory: () => Promise<StoreFactory>): void {
  describe(`JobQueue: ${name}`, () => {
    let f: StoreFactory;
    const cleanups: Array<() => Promise<void>> = [];
    beforeEach(async () => {
      f = await factory();
    });
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
      await f.cleanup();
    });

    const log = () => ({ started: [] as string[], where: new Map<string, string>(), active: new Map<string, number>(), overlap: 0 });

    /** One server instance: its own store connection and queue. */
    async function instance(l: ReturnType<typeof log>, name: string, options: Partial<LeasedQueueOptions> = {}) {
      const store = await f.open();
      const runner = gatedRunner(name, l);
      const queue = new LeasedJobQueue({ store, run: runner.run, logger, concurrency: 2, accountCap: 2, queueLimit: 100, leaseMs: LEASE_MS, sole: false, progressIntervalMs: 0, ...options });
      await queue.start();
      cleanups.push(async () => {
        await queue.close(200);
        await store.close();
      });
      return { store, queue, ...runner };
    }

    const accountIn = async (store: Store) => (await store.accounts.createAccount('pro')).id;
    const job = (accountId: string, repository = `${accountId}/cloud`): NewBackup => ({
      id: newId('bkp'),
      accountId,
      repository,
      source: '/src',
      destination: 'cloud',
      compression: 'zstd',
      encryption: true,
      deduplication: true,
    });
    const statusOf = async (store: Store, id: string) => (await store.jobs.get(id))?.status;

    it('runs at most `concurrency` jobs here, each job once, and every job to completion', async () => {
      const l = log();
      const a = await instance(l, 'a', { concurrency: 2, accountCap: 10 });
      const acc = await accountIn(a.store);
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push((await a.queue.submitBackup(job(acc, `${acc}/r${i}`)))!.id);
      await until('two run', () => l.started.length === 2);
      await new Promise((r) => setTimeout(r, 50));
      expect(l.started).toHaveLength(2);
      for (let i = 0; i < ids.length; i++) {
        await until(`job ${i} runs`, () => l.started.includes(ids[i]!));
        a.release(ids[i]!);
        expect(await a.queue.waitSettled(ids[i]!, 5000)).toBe(true);
      }
      expect([...l.started].sort()).toEqual([...ids].sort());
      for (const id of ids) expect(await statusOf(a.store, id)).toBe('completed');
    });

    it('never runs two jobs of one repository at once, across instances, in the order they were queued', async () => {
      const l = log();
      const a = await instance(l, 'a');
      const b = await instance(l, 'b');
      const acc = await accountIn(a.store);
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push((await (i % 2 ? b : a).queue.submitBackup(job(acc)))!.id);
      for (const id of ids) {
        await until(`${id} runs`, () => l.started.includes(id));
        await new Promise((r) => setTimeout(r, 30));
        expect(l.started).toHaveLength(ids.indexOf(id) + 1);
        (l.where.get(id) === 'a' ? a : b).release(id);
      }
      await until('all settle', async () => (await Promise.all(ids.map((id) => statusOf(a.store, id)))).every((s) => s === 'completed'));
      expect(l.overlap).toBe(1);
      expect(l.started).toEqual(ids);
    });

    it("starts another account's job within one job slot, whatever the first has queued, and caps an account's running jobs", async () => {
      const l = log();
      const a = await instance(l, 'a', { concurrency: 1 });
      const busy = await accountIn(a.store);
      const other = await accountIn(a.store);
      const flood: string[] = [];
      for (let i = 0; i < 20; i++) flood.push((await a.queue.submitBackup(job(busy)))!.id);
      await until('the first runs', () => l.started.length === 1);
      const small = (await a.queue.submitBackup(job(other)))!.id;
      a.release(flood[0]!);
      await until('the next starts', () => l.started.length === 2);
      expect(l.started[1]).toBe(small);
      a.release(small);
      await until('the flood goes on', () => l.started.length === 3);

      const capped = await instance(l, 'c', { concurrency: 3, accountCap: 1 });
      const one = await accountIn(capped.store);
      const three: string[] = [];
      for (let i = 0; i < 3; i++) three.push((await capped.queue.submitBackup(job(one, `${one}/r${i}`)))!.id);
      await until('one runs', () => three.some((id) => l.started.includes(id)));
      await new Promise((r) => setTimeout(r, 100));
      expect(three.filter((id) => l.started.includes(id))).toHaveLength(1);
    });

    it('refuses a job beyond the account queue limit, and takes it once the queue has room', async () => {
      const l = log();
      const a = await instance(l, 'a', { concurrency: 1, queueLimit: 2 });
      const acc = await accountIn(a.store);
      const first = (await a.queue.submitBackup(job(acc)))!.id;
      await until('it runs', () => l.started.includes(first));
      expect(await a.queue.submitBackup(job(acc))).not.toBeNull();
      expect(await a.queue.submitBackup(job(acc))).not.toBeNull();
      const refused = job(acc);
      expect(await a.queue.submitBackup(refused)).toBeNull();
      expect(await a.store.jobs.get(refused.id)).toBeUndefined();
      const another = (await a.queue.submitBackup(job(await accountIn(a.store))))!.id; // another account is not affected
      a.release(first);
      await until("the other account's job runs", () => l.started.includes(another));
      a.release(another);
      await until('one queued job runs', () => l.started.length === 3);
      expect(await a.queue.submitBackup(job(acc))).not.toBeNull();
    });

    it('cancels a queued job at once, a running one here or on another instance within seconds', async () => {
      const l = log();
      const a = await instance(l, 'a', { concurrency: 1 });
      const b = await instance(l, 'b', { concurrency: 1 });
      const acc = await accountIn(a.store);
      const first = (await a.queue.submitBackup(job(acc)))!.id;
      const waiting = (await a.queue.submitBackup(job(acc)))!.id;
      await until('the first runs', () => l.started.includes(first));
      expect(await b.queue.cancel(waiting)).toBe(true);
      expect(await statusOf(a.store, waiting)).toBe('cancelled');
      const runsOn = l.where.get(first)!;
      const elsewhere = runsOn === 'a' ? b : a;
      const asked = Date.now();
      expect(await elsewhere.queue.cancel(first)).toBe(true);
      expect(await elsewhere.queue.waitSettled(first, 5000)).toBe(true);
      expect(Date.now() - asked).toBeLessThan(5000);
      expect(await statusOf(a.store, first)).toBe('cancelled');
      expect(await a.queue.cancel(first)).toBe(false);
      expect(await a.queue.cancel('bkp_01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBe(false);
    });

    it('records what the runner reports: a job failure with its code, anything else as INTERNAL_ERROR', async () => {
      const l = log();
      const a = await instance(l, 'a');
      const acc = await accountIn(a.store);
      const known = (await a.queue.submitBackup(job(acc, `${acc}/x`)))!.id;
      const unknown = (await a.queue.submitBackup(job(acc, `${acc}/y`)))!.id;
      await until('both run', () => l.started.length === 2);
      a.fail(known, new JobFailure('INVALID_SOURCE', 'The source no longer exists.'));
      a.fail(unknown, new Error('/secret/path: internal detail'));
      await a.queue.waitSettled(known, 5000);
      await a.queue.waitSettled(unknown, 5000);
      expect(await a.store.jobs.get(known)).toMatchObject({ status: 'failed', error: { code: 'INVALID_SOURCE', message: 'The source no longer exists.' } });
      const internal = (await a.store.jobs.get(unknown))!;
      expect(internal).toMatchObject({ status: 'failed', error: { code: 'INTERNAL_ERROR' } });
      expect(internal.error!.message).not.toContain('secret');
    });

    it('loses nothing when an instance is lost: another records its job INTERRUPTED within the lease and runs the next', async () => {
      const l = log();
      const a = await instance(l, 'a', { concurrency: 1 });
      const acc = await accountIn(a.store);
      const doomed = (await a.queue.submitBackup(job(acc)))!.id;
      await until('it runs on a', () => l.started.includes(doomed));
      const b = await instance(l, 'b', { concurrency: 1 });
      const next = (await b.queue.submitBackup(job(acc)))!.id;
      // Instance a loses its database for good: it can renew nothing.
      const lost = Date.now();
      await a.store.close();
      expect(await b.queue.waitSettled(doomed, 10_000)).toBe(true);
      expect(Date.now() - lost).toBeLessThan(LEASE_MS + 500);
      expect(await b.store.jobs.get(doomed)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
      await until('the next job of the repository runs on b', () => l.where.get(next) === 'b');
      b.release(next);
      expect(await b.queue.waitSettled(next, 5000)).toBe(true);
      expect(await statusOf(b.store, next)).toBe('completed');
    });

    it('waits for a job another instance runs, and times out while it runs', async () => {
      const l = log();
      const a = await instance(l, 'a');
      const b = await instance(l, 'b', { concurrency: 0 + 1 });
      const acc = await accountIn(a.store);
      const id = (await a.queue.submitBackup(job(acc)))!.id;
      await until('it runs', () => l.started.includes(id));
      const waiter = l.where.get(id) === 'a' ? b : a;
      expect(await waiter.queue.waitSettled(id, 50)).toBe(false);
      const settled = waiter.queue.waitSettled(id, 5000);
      (l.where.get(id) === 'a' ? a : b).release(id);
      expect(await settled).toBe(true);
      expect(await waiter.queue.waitSettled(id, 5000)).toBe(true);
    });

    it('on close interrupts the jobs running here (even one that ignores its signal) and leaves queued ones to others', async () => {
      const l = log();
      const store = await f.open();
      const stuck: JobRunner = async (j) => {
        l.started.push(j.id);
        return new Promise<JobOutcome>(() => {}); // never settles, ignores its signal
      };
      const queue = new LeasedJobQueue({ store, run: stuck, logger, concurrency: 1, accountCap: 2, queueLimit: 100, leaseMs: LEASE_MS, sole: false });
      await queue.start();
      const acc = await accountIn(store);
      const running = (await queue.submitBackup(job(acc)))!.id;
      const queued = (await queue.submitBackup(job(acc)))!.id;
      await until('it runs', () => l.started.includes(running));
      await queue.close(50);
      expect(await store.jobs.get(running)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
      expect(await statusOf(store, queued)).toBe('queued');
      const next = await instance(l, 'next');
      await until('another instance takes the queued job', () => l.where.get(queued) === 'next');
      next.release(queued);
      await store.close();
    });

    it('at start as the only process on its store, records jobs left running INTERRUPTED at once', async () => {
      const l = log();
      const store = await f.open();
      const acc = await accountIn(store);
      const left = new LeasedJobQueue({ store, run: gatedRunner('old', l).run, logger, concurrency: 1, accountCap: 2, queueLimit: 100, leaseMs: 600_000, sole: false });
      await left.start();
      const id = (await left.submitBackup(job(acc)))!.id;
      await until('it runs', () => l.started.includes(id));
      // The process "dies": no close, its lease still far from running out.
      const restarted = new LeasedJobQueue({ store, run: gatedRunner('new', l).run, logger, concurrency: 1, accountCap: 2, queueLimit: 100, leaseMs: 600_000, sole: true });
      const recovered = await restarted.start();
      expect(recovered.interrupted).toContain(id);
      expect(await store.jobs.get(id)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
      await restarted.close(50);
      await left.close(50);
      await store.close();
    });
  });
}

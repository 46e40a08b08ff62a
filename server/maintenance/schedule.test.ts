import { pino } from 'pino';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { newId } from '../ids.ts';
import { LeasedJobQueue } from '../jobs/leased-queue.ts';
import type { JobRunner } from '../jobs/queue.ts';
import * as state from '../jobs/state.ts';
import type { MaintenanceJob, Store } from '../store/index.ts';
import { tempStore } from '../testing/temp-store.ts';
import { MaintenanceSchedule } from './schedule.ts';

const logger = pino({ level: 'silent' });
const HOUR = 3_600_000;
let store: Store;
let cleanup: () => Promise<void>;
let queue: LeasedJobQueue;
const ran: MaintenanceJob[] = [];

// The runner stands in for the engine: what is under test is which jobs the schedule queues.
const run: JobRunner = async (job) => {
  ran.push(job as MaintenanceJob);
  return { result: { outcome: {} }, progress: { filesDone: 0, filesTotal: 0, bytesDone: 0, bytesTotal: 0 }, warnings: { count: 0, items: [] } };
};

beforeEach(async () => {
  ({ store, cleanup } = await tempStore());
  queue = new LeasedJobQueue({ store, run, logger, concurrency: 4, accountCap: 4, queueLimit: 100, leaseMs: 30_000, sole: true });
  await queue.start();
  ran.length = 0;
});
afterEach(async () => {
  await queue.close();
  await cleanup();
});

async function completedBackup(accountId: string, destination: string): Promise<void> {
  const job = (await store.jobs.insertBackup({ id: newId('bkp'), accountId, repository: `${accountId}/${destination}`, source: '/src', destination, compression: 'zstd', encryption: true, deduplication: true }, 100))!;
  const claim = { owner: 'inst_test', leaseMs: 60_000, accountCap: 4 };
  expect(await state.start(store, job, claim)).toBe(true);
  const outcome = { result: { snapshotId: 'a'.repeat(64), filesBackedUp: 1, sizeBytes: 1, storedBytes: 1 }, progress: job.progress, warnings: job.warnings };
  expect(await state.complete(store, job, claim.owner, outcome)).toBe(true);
}

async function settled(ids: string[]): Promise<void> {
  for (const id of ids) expect(await queue.waitSettled(id, 10_000)).toBe(true);
}

it('queues a prune and a check for every repository with backups once their interval has passed, never twice', async () => {
  const a = (await store.accounts.createAccount('pro')).id;
  const b = (await store.accounts.createAccount('pro')).id;
  await store.accounts.createAccount('pro'); // no backups: nothing to maintain
  await completedBackup(a, 'cloud');
  await completedBackup(b, 'local');
  const schedule = new MaintenanceSchedule({ store, queue, settings: { pruneHours: 24, checkHours: 48, checkReadPercent: 5 }, logger });

  const now = Date.now();
  const first = await schedule.tick(now);
  expect(first).toHaveLength(4);
  await settled(first);
  const jobs = await Promise.all(first.map(async (id) => (await store.jobs.getMaintenance(id))!));
  expect(jobs.map((j) => [j.accountId, j.destination, j.operation]).sort()).toEqual(
    [
      [a, 'cloud', 'check'],
      [a, 'cloud', 'prune'],
      [b, 'local', 'check'],
      [b, 'local', 'prune'],
    ].sort(),
  );
  expect(jobs.every((j) => j.trigger === 'schedule' && j.status === 'completed')).toBe(true);
  expect(jobs.filter((j) => j.operation === 'check').every((j) => j.readDataSubset === '5%' && !j.readData)).toBe(true);
  expect(jobs.filter((j) => j.operation === 'prune').every((j) => !j.dryRun)).toBe(true);

  expect(await schedule.tick(now)).toEqual([]);
  const day = await schedule.tick(now + 25 * HOUR);
  expect(day).toHaveLength(2); // the prunes; the checks are not due yet
  await settled(day);
  // (the clock of the jobs is the database's: the prunes just queued count as a day old by then too)
  const later = await schedule.tick(now + 49 * HOUR);
  expect(later).toHaveLength(4);
  await settled(later);
  expect(ran).toHaveLength(10);
});

it('is off when both intervals are 0, and a dry run does not count as a prune', async () => {
  const a = (await store.accounts.createAccount('pro')).id;
  await completedBackup(a, 'cloud');
  const dry = (await queue.submitMaintenance({ id: newId('mnt'), accountId: a, repository: `${a}/cloud#maintenance`, operation: 'prune', destination: 'cloud', trigger: 'request', dryRun: true, readData: false, readDataSubset: null }))!;
  await settled([dry.job.id]);
  const off = new MaintenanceSchedule({ store, queue, settings: { pruneHours: 0, checkHours: 0, checkReadPercent: 5 }, logger });
  off.start();
  expect(await off.tick()).toEqual([]);
  off.stop();
  const on = new MaintenanceSchedule({ store, queue, settings: { pruneHours: 24, checkHours: 0, checkReadPercent: 100 }, logger });
  const queued = await on.tick();
  expect(queued).toHaveLength(1);
  expect((await store.jobs.getMaintenance(queued[0]!))).toMatchObject({ operation: 'prune', dryRun: false });
});

import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { newId } from '../ids.ts';
import type { JobKind, Store } from '../store/index.ts';
import { tempStore } from '../store/test-helpers.ts';
import { ABORT_CANCEL, JobQueue } from './queue.ts';

const logger = pino({ level: 'silent' });

/** A runner with the same store discipline as the real ones, whose work is a promise the test releases. */
function gatedRunner(store: Store) {
  const gates = new Map<string, () => void>();
  const started: string[] = [];
  let active = 0;
  let maxActive = 0;
  const run = async (kind: JobKind, id: string, signal: AbortSignal): Promise<void> => {
    if (!store.jobs.markRunning(kind, id)) return;
    started.push(id);
    active++;
    maxActive = Math.max(maxActive, active);
    try {
      await new Promise<void>((resolve, reject) => {
        gates.set(id, resolve);
        signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      });
      store.jobs.completeBackup(id, { snapshotId: 's', filesBackedUp: 0, sizeBytes: 0, storedBytes: 0, progress: { filesDone: 0, filesTotal: 0, bytesDone: 0, bytesTotal: 0 } });
    } catch {
      if (signal.reason === ABORT_CANCEL) store.jobs.finish(kind, id, 'cancelled', null);
      else store.jobs.finish(kind, id, 'failed', { code: 'INTERRUPTED', message: 'stopped' });
    } finally {
      active--;
    }
  };
  const release = (id: string) => gates.get(id)?.();
  const tick = () => new Promise((r) => setTimeout(r, 10));
  return { run, release, started, tick, maxActive: () => maxActive };
}

describe('JobQueue', () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => cleanups.splice(0).forEach((c) => c()));

  function setup(concurrency: number) {
    const t = tempStore();
    cleanups.push(t.cleanup);
    const account = t.store.accounts.createAccount('pro');
    const runner = gatedRunner(t.store);
    const queue = new JobQueue({ store: t.store, run: runner.run, logger, concurrency });
    const add = () => {
      const id = newId('bkp');
      t.store.jobs.insertBackup({ id, accountId: account.id, source: '/x', destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
      return id;
    };
    return { store: t.store, queue, runner, add };
  }

  it('runs at most `concurrency` jobs and keeps FIFO order', async () => {
    const { store, queue, runner, add } = setup(2);
    const ids = [add(), add(), add(), add()];
    ids.forEach((id, i) => queue.enqueue('backup', id, `repo${i}`));
    await runner.tick();
    expect(runner.started).toEqual([ids[0], ids[1]]);
    expect(store.jobs.getBackup(ids[2]!)?.status).toBe('queued');
    runner.release(ids[0]!);
    await runner.tick();
    expect(runner.started).toEqual([ids[0], ids[1], ids[2]]);
    ids.forEach((id) => runner.release(id));
    await runner.tick();
    runner.release(ids[3]!);
    for (const id of ids) expect(await queue.waitSettled('backup', id, 1000)).toBe(true);
    expect(runner.maxActive()).toBe(2);
    expect(ids.map((id) => store.jobs.getBackup(id)?.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
  });

  it('never runs two jobs of one repository at once', async () => {
    const { queue, runner, add } = setup(4);
    const a = add();
    const b = add();
    const c = add();
    queue.enqueue('backup', a, 'same');
    queue.enqueue('backup', b, 'same');
    queue.enqueue('backup', c, 'other');
    await runner.tick();
    expect(runner.started).toEqual([a, c]);
    runner.release(a);
    await runner.tick();
    expect(runner.started).toEqual([a, c, b]);
    runner.release(b);
    runner.release(c);
  });

  it('cancels a waiting job at once and a running one through its signal', async () => {
    const { store, queue, runner, add } = setup(1);
    const running = add();
    const waiting = add();
    queue.enqueue('backup', running, 'r1');
    queue.enqueue('backup', waiting, 'r2');
    await runner.tick();
    expect(queue.cancel('backup', waiting)).toBe(true);
    expect(store.jobs.getBackup(waiting)?.status).toBe('cancelled');
    expect(queue.cancel('backup', running)).toBe(true);
    expect(await queue.waitSettled('backup', running, 1000)).toBe(true);
    expect(store.jobs.getBackup(running)?.status).toBe('cancelled');
    expect(queue.cancel('backup', running)).toBe(false);
    expect(runner.started).toEqual([running]);
  });

  it('waitSettled times out while a job runs and resolves at once for a finished one', async () => {
    const { queue, runner, add } = setup(1);
    const id = add();
    queue.enqueue('backup', id, 'r');
    await runner.tick();
    expect(await queue.waitSettled('backup', id, 30)).toBe(false);
    const settled = queue.waitSettled('backup', id, 1000);
    runner.release(id);
    expect(await settled).toBe(true);
    expect(await queue.waitSettled('backup', id, 1000)).toBe(true);
  });

  it('close() interrupts running jobs and leaves waiting ones queued in the store', async () => {
    const { store, queue, runner, add } = setup(1);
    const running = add();
    const waiting = add();
    queue.enqueue('backup', running, 'r1');
    queue.enqueue('backup', waiting, 'r2');
    await runner.tick();
    await queue.close();
    expect(store.jobs.getBackup(running)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
    expect(store.jobs.getBackup(waiting)?.status).toBe('queued');
    queue.enqueue('backup', add(), 'r3');
    await runner.tick();
    expect(runner.started).toEqual([running]);
  });

  it('close() records a job that ignores its abort signal as interrupted after the timeout', async () => {
    const t = tempStore();
    cleanups.push(t.cleanup);
    const account = t.store.accounts.createAccount('pro');
    const id = newId('bkp');
    t.store.jobs.insertBackup({ id, accountId: account.id, source: '/x', destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true });
    const stuck = async (kind: JobKind, jobId: string): Promise<void> => {
      t.store.jobs.markRunning(kind, jobId);
      await new Promise(() => {}); // never settles, ignores the signal
    };
    const queue = new JobQueue({ store: t.store, run: stuck, logger, concurrency: 1 });
    queue.enqueue('backup', id, 'r');
    await new Promise((r) => setTimeout(r, 10));
    await queue.close(50);
    expect(t.store.jobs.getBackup(id)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
  });
});

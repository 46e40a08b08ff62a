import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { FINAL_STATUSES, StoreUnavailableError, type Job, type JobEvent, type NewBackup, type NewMaintenance, type NewRestore, type Store } from '../store/index.ts';
import { fairOrder } from './fair-order.ts';
import { ProgressWriter } from './progress-writer.ts';
import { ABORT_CANCEL, ABORT_LOST, ABORT_SHUTDOWN, JobFailure, type JobQueue, type JobRunner } from './queue.ts';
import * as state from './state.ts';
import type { JobRef } from './state.ts';

export interface LeasedQueueOptions {
  store: Store;
  run: JobRunner;
  logger: Logger;
  /** Jobs this instance runs at once (JOB_CONCURRENCY). */
  concurrency: number;
  /** Jobs one account may have running at once, every instance together. */
  accountCap: number;
  /** Jobs one account may have queued; more are refused (QUEUE_FULL). */
  queueLimit: number;
  /** JOB_LEASE_MS: how long a running job may go unheard from before another instance records it interrupted. */
  leaseMs: number;
  /** This process is the only one on its store (embedded): whatever is running at start was left by a previous run. */
  sole: boolean;
  /** How often progress is written (default 500 ms). */
  progressIntervalMs?: number;
  /** Told of every change of status this instance makes (metrics, audit log). */
  observer?: state.StatusObserver;
}

/** Waiters for settled jobs fall back to reading the job this often (a lost notification). */
const WAIT_POLL_MS = 5000;

interface Active {
  ref: JobRef;
  controller: AbortController;
  done: Promise<void>;
}

/**
 * The job queue on the store's primitives. A claim is a compare-and-set to running with a lease
 * (half of JOB_LEASE_MS) that a heartbeat renews; an instance that stops renewing loses its jobs
 * to the reaper of any other instance, which records them INTERRUPTED within JOB_LEASE_MS.
 * Wake-ups come from the store's events (LISTEN/NOTIFY, or in process); timers only renew,
 * reap, and catch what a lost notification missed.
 */
export class LeasedJobQueue implements JobQueue {
  readonly owner = `inst_${randomBytes(8).toString('hex')}`;
  private readonly o: LeasedQueueOptions;
  private readonly claim: state.Claim;
  private readonly running = new Map<string, Active>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => void) | null = null;
  private closed = false;
  private pumping = false;
  private pumpAgain = false;

  constructor(options: LeasedQueueOptions) {
    this.o = options;
    this.claim = { owner: this.owner, leaseMs: Math.max(1, Math.floor(options.leaseMs / 2)), accountCap: options.accountCap };
  }

  get runningHere(): number {
    return this.running.size;
  }

  async start(): Promise<{ interrupted: string[]; queued: number }> {
    const { store } = this.o;
    this.unsubscribe = store.events.subscribe((event) => this.onEvent(event));
    const interrupted: string[] = [];
    const left = this.o.sole ? await store.jobs.running() : await store.jobs.expired();
    for (const ref of left) {
      if (await state.interrupt(store, ref, this.o.sole ? { anyHolder: true } : { leaseExpired: true }, this.o.observer)) interrupted.push(ref.id);
    }
    const { queued } = await store.jobs.counts();
    const beat = Math.min(Math.floor(this.o.leaseMs / 4), 4000);
    this.every(beat, () => this.heartbeat());
    this.every(Math.floor(this.o.leaseMs / 4), () => this.reap());
    this.pump();
    return { interrupted, queued };
  }

  async submitBackup(job: NewBackup) {
    const created = await this.o.store.jobs.insertBackup(job, this.o.queueLimit);
    if (created) await this.announce(created.id);
    return created;
  }

  async submitRestore(job: NewRestore) {
    const created = await this.o.store.jobs.insertRestore(job, this.o.queueLimit);
    if (created) await this.announce(created.id);
    return created;
  }

  async submitMaintenance(job: NewMaintenance) {
    const created = await this.o.store.jobs.insertMaintenance(job, this.o.queueLimit);
    if (created?.inserted) await this.announce(created.job.id);
    return created;
  }

  async cancel(id: string): Promise<boolean> {
    const { store } = this.o;
    // A queued job may be claimed between the read and the change: then it is cancelled as a running one.
    for (let attempt = 0; attempt < 3; attempt++) {
      const job = await store.jobs.get(id);
      if (!job || FINAL_STATUSES.includes(job.status)) return false;
      if (job.status === 'queued') {
        if (await state.cancel(store, job, null, this.o.observer)) return true;
        continue;
      }
      const local = this.running.get(id);
      if (local) {
        local.controller.abort(ABORT_CANCEL);
        return true;
      }
      if (await store.jobs.requestCancel(id)) {
        await store.events.publish({ type: 'cancel', id });
        return true;
      }
    }
    return false;
  }

  waitSettled(id: string, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      let finished = false;
      const finish = (settled: boolean): void => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        clearInterval(poll);
        const set = this.waiters.get(id);
        set?.delete(check);
        if (set?.size === 0) this.waiters.delete(id);
        resolve(settled);
      };
      const check = (): void => {
        this.o.store.jobs.get(id).then(
          (job) => {
            if (!job || FINAL_STATUSES.includes(job.status)) finish(true);
          },
          () => {}, // the store is down: the next check or the timeout answers
        );
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      const poll = setInterval(check, WAIT_POLL_MS);
      if (!this.waiters.has(id)) this.waiters.set(id, new Set());
      this.waiters.get(id)!.add(check);
      check();
    });
  }

  async close(timeoutMs = 10_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    const active = [...this.running.values()];
    for (const a of active) a.controller.abort(ABORT_SHUTDOWN);
    let timer: NodeJS.Timeout | undefined;
    const stopped = await Promise.race([
      Promise.allSettled(active.map((a) => a.done)).then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!stopped) {
      for (const { ref } of this.running.values()) {
        this.o.logger.warn({ job_id: ref.id }, 'job did not stop in time; recorded as interrupted');
        await state.interrupt(this.o.store, ref, { owner: this.owner }, this.o.observer).catch(() => {});
      }
    }
    this.unsubscribe?.();
  }

  private onEvent(event: JobEvent | { type: 'resync' }): void {
    if (event.type === 'queued') this.pump();
    else if (event.type === 'settled') {
      this.pump();
      this.wake(event.id);
    } else if (event.type === 'cancel') this.running.get(event.id)?.controller.abort(ABORT_CANCEL);
    else {
      this.pump();
      for (const id of this.waiters.keys()) this.wake(id);
      this.heartbeat().catch(() => {});
    }
  }

  private wake(id: string): void {
    for (const check of this.waiters.get(id) ?? []) check();
  }

  private async announce(id: string): Promise<void> {
    await this.o.store.events.publish({ type: 'queued', id }).catch((err: unknown) => this.o.logger.warn({ err }, 'job notification failed'));
    this.pump();
  }

  private every(ms: number, task: () => Promise<void>): void {
    const timer = setInterval(() => {
      task().catch((err: unknown) => this.o.logger.warn({ err }, 'job queue upkeep failed; retrying'));
    }, Math.max(ms, 10));
    timer.unref();
    this.timers.push(timer);
  }

  /** Renews the leases of the jobs running here; stops those another instance took, or that were asked to cancel. */
  private async heartbeat(): Promise<void> {
    const ids = [...this.running.keys()];
    if (ids.length === 0) return;
    const { held, cancelRequested } = await this.o.store.jobs.renewLeases(this.owner, ids, this.claim.leaseMs);
    for (const id of ids) if (!held.includes(id)) this.running.get(id)?.controller.abort(ABORT_LOST);
    for (const id of cancelRequested) this.running.get(id)?.controller.abort(ABORT_CANCEL);
  }

  /** Records as interrupted the jobs whose instance stopped renewing their lease. */
  private async reap(): Promise<void> {
    for (const ref of await this.o.store.jobs.expired()) {
      if (this.running.has(ref.id)) continue; // ours and alive: the heartbeat renews it
      if (await state.interrupt(this.o.store, ref, { leaseExpired: true }, this.o.observer)) {
        this.o.logger.warn({ job_id: ref.id }, 'job interrupted: the instance running it stopped renewing its lease');
      }
    }
    this.pump();
  }

  /** Fills free slots, one claim at a time, in fair order; runs again if woken meanwhile. */
  private pump(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    this.fill()
      .catch((err: unknown) => this.o.logger.warn({ err }, 'job queue could not claim; retrying'))
      .finally(() => {
        this.pumping = false;
        if (this.pumpAgain) {
          this.pumpAgain = false;
          this.pump();
        }
      });
  }

  private async fill(): Promise<void> {
    while (!this.closed && this.running.size < this.o.concurrency) {
      let claimed: JobRef | null = null;
      for (const c of fairOrder(await this.o.store.jobs.candidates(), this.o.accountCap)) {
        if (await state.start(this.o.store, c, this.claim, this.o.observer)) {
          claimed = c;
          break;
        }
      }
      if (!claimed || this.closed) return;
      this.launch({ kind: claimed.kind, id: claimed.id });
    }
  }

  private launch(ref: JobRef): void {
    const controller = new AbortController();
    const done = this.o.store.jobs
      .get(ref.id)
      .then((job) => job && this.execute(job, controller.signal))
      .catch((err: unknown) => this.o.logger.error({ err, job_id: ref.id }, 'job outcome not recorded; the lease will run out and the job be recorded interrupted'))
      .finally(() => {
        this.running.delete(ref.id);
        this.wake(ref.id);
        this.pump();
      });
    this.running.set(ref.id, { ref, controller, done });
  }

  private async execute(job: Job, signal: AbortSignal): Promise<void> {
    const { store, logger } = this.o;
    const ref = { kind: job.kind, id: job.id };
    const progress = new ProgressWriter((p) => store.jobs.updateProgress(job.id, this.owner, p), this.o.progressIntervalMs);
    try {
      const phase = (name: string): void => void store.jobs.updatePhase(job.id, this.owner, name).catch((err: unknown) => logger.warn({ err, job_id: job.id }, 'job phase not recorded'));
      const outcome = await this.o.run(job, { signal, progress: progress.report, phase });
      if (!(await this.record(() => state.complete(store, ref, this.owner, outcome, this.o.observer)))) {
        logger.warn({ job_id: job.id }, 'job finished after another instance recorded it interrupted; its result is not kept');
      }
    } catch (err) {
      const reason: unknown = signal.aborted ? signal.reason : null;
      if (reason === ABORT_LOST) logger.warn({ job_id: job.id }, 'job stopped: another instance recorded it interrupted');
      else if (reason === ABORT_CANCEL) await this.record(() => state.cancel(store, ref, this.owner, this.o.observer));
      else if (reason === ABORT_SHUTDOWN) await this.record(() => state.interrupt(store, ref, { owner: this.owner }, this.o.observer));
      else if (err instanceof JobFailure) {
        logger.info({ job_id: job.id, code: err.code }, `${job.kind} failed`);
        await this.record(() => state.fail(store, ref, this.owner, { code: err.code, message: err.message }, this.o.observer, err.result));
      } else if (err instanceof StoreUnavailableError) {
        logger.warn({ err, job_id: job.id }, 'job stopped: the database could not be reached');
        await this.record(() => state.fail(store, ref, this.owner, { ...state.INTERRUPTED, message: 'The database could not be reached while the job ran.' }, this.o.observer));
      } else {
        logger.error({ err, job_id: job.id }, 'job failed');
        await this.record(() => state.fail(store, ref, this.owner, { code: 'INTERNAL_ERROR', message: 'The job failed because of an internal error.' }, this.o.observer));
      }
    }
  }

  /**
   * Records a job's outcome, retrying while the database cannot be reached, for as long as the
   * job's lease could hold: a result is not lost to a short outage. After that, the job is left
   * to be recorded interrupted by whichever instance finds its lease run out.
   */
  private async record(change: () => Promise<boolean>): Promise<boolean> {
    const until = Date.now() + this.o.leaseMs;
    for (;;) {
      try {
        return await change();
      } catch (err) {
        if (!(err instanceof StoreUnavailableError) || Date.now() > until || this.closed) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }
}

import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { JobKind, Store } from '../store/index.ts';
import { FINAL_STATUSES } from '../store/jobs.ts';

/** Why a running job's signal was aborted; the runner records cancelled or failed/INTERRUPTED. */
export const ABORT_CANCEL = 'cancel';
export const ABORT_SHUTDOWN = 'shutdown';

/** Runs one job to a final state (the runner writes every state change to the store). */
export type JobRunner = (kind: JobKind, id: string, signal: AbortSignal) => Promise<void>;

interface Pending {
  kind: JobKind;
  id: string;
  /** Jobs with the same lock key (one repository) never run at the same time. */
  lockKey: string;
}

/**
 * The in-process job queue: FIFO with a concurrency limit and one job per repository at a time.
 * The store is the source of truth for states; this holds only what is waiting or running here.
 */
export class JobQueue {
  private readonly store: Store;
  private readonly run: JobRunner;
  private readonly logger: Logger;
  private readonly concurrency: number;
  private readonly pending: Pending[] = [];
  private readonly running = new Map<string, { job: Pending; controller: AbortController; done: Promise<void> }>();
  private readonly busyKeys = new Set<string>();
  private readonly settled = new EventEmitter();
  private closed = false;

  constructor(opts: { store: Store; run: JobRunner; logger: Logger; concurrency: number }) {
    this.store = opts.store;
    this.run = opts.run;
    this.logger = opts.logger;
    this.concurrency = opts.concurrency;
    this.settled.setMaxListeners(0);
  }

  enqueue(kind: JobKind, id: string, lockKey: string): void {
    if (this.closed) return; // stays queued in the store; the next start picks it up
    this.pending.push({ kind, id, lockKey });
    this.pump();
  }

  /**
   * Cancels a waiting job at once, or signals a running one (its runner records the outcome).
   * Returns false when the job had already finished.
   */
  cancel(kind: JobKind, id: string): boolean {
    const index = this.pending.findIndex((p) => p.id === id);
    if (index >= 0) this.pending.splice(index, 1);
    const active = this.running.get(id);
    if (active) {
      active.controller.abort(ABORT_CANCEL);
      return true;
    }
    const changed = this.store.jobs.finish(kind, id, 'cancelled', null);
    if (changed) this.notifySettled(id);
    return changed;
  }

  /** Resolves true once the job is in a final state, false after timeoutMs. */
  waitSettled(kind: JobKind, id: string, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const onSettled = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.settled.off(id, onSettled);
        resolve(false);
      }, timeoutMs);
      this.settled.once(id, onSettled);
      const job = kind === 'backup' ? this.store.jobs.getBackup(id) : this.store.jobs.getRestore(id);
      if (!job || FINAL_STATUSES.includes(job.status)) {
        this.settled.off(id, onSettled);
        onSettled();
      }
    });
  }

  notifySettled(id: string): void {
    this.settled.emit(id);
  }

  get size(): { waiting: number; running: number } {
    return { waiting: this.pending.length, running: this.running.size };
  }

  /**
   * Stops taking work and aborts running jobs (their runners record them as interrupted); waiting
   * ones stay queued for the next start. A job that has not stopped after `timeoutMs` is recorded
   * as interrupted here, so shutdown never waits on a stuck job.
   */
  async close(timeoutMs = 10_000): Promise<void> {
    this.closed = true;
    this.pending.length = 0;
    const active = [...this.running.values()];
    for (const a of active) a.controller.abort(ABORT_SHUTDOWN);
    let timer: NodeJS.Timeout | undefined;
    const stopped = await Promise.race([
      Promise.allSettled(active.map((a) => a.done)).then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (stopped) return;
    for (const { job } of this.running.values()) {
      this.logger.warn({ job_id: job.id }, 'job did not stop in time; recorded as interrupted');
      if (this.store.jobs.finish(job.kind, job.id, 'failed', { code: 'INTERRUPTED', message: 'The server stopped while the job was running.' })) {
        this.notifySettled(job.id);
      }
    }
  }

  private pump(): void {
    while (!this.closed && this.running.size < this.concurrency) {
      const index = this.pending.findIndex((p) => !this.busyKeys.has(p.lockKey));
      if (index < 0) return;
      const [job] = this.pending.splice(index, 1) as [Pending];
      this.start(job);
    }
  }

  private start(job: Pending): void {
    const controller = new AbortController();
    this.busyKeys.add(job.lockKey);
    const done = this.run(job.kind, job.id, controller.signal)
      .catch((err: unknown) => {
        // A runner records failures itself; reaching here means the store write failed too.
        this.logger.error({ err, job_id: job.id }, 'job runner failed');
      })
      .finally(() => {
        this.running.delete(job.id);
        this.busyKeys.delete(job.lockKey);
        this.notifySettled(job.id);
        this.pump();
      });
    this.running.set(job.id, { job, controller, done });
  }
}

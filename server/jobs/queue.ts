import type {
  BackupJob,
  BackupResult,
  Job,
  MaintenanceJob,
  MaintenanceResult,
  NewBackup,
  NewMaintenance,
  NewRestore,
  Progress,
  RestoreJob,
  RestoreResult,
  Warnings,
} from '../store/index.ts';

/** Why a running job's signal was aborted. */
export const ABORT_CANCEL = 'cancel';
export const ABORT_SHUTDOWN = 'shutdown';
/** Another instance took the job as interrupted (this one stopped renewing its lease in time). */
export const ABORT_LOST = 'lost';

/** What a job that ran to its end hands back to be recorded with its completion. */
export interface JobOutcome {
  result: BackupResult | RestoreResult | MaintenanceResult;
  progress: Progress;
  warnings: Warnings;
}

/** A failure the job records as its `error` (codes as the API reports them). */
export class JobFailure extends Error {
  readonly code: string;
  /** What the job found before it failed, kept with the failure (a check's problems). */
  readonly result: MaintenanceResult | undefined;
  constructor(code: string, message: string, result?: MaintenanceResult) {
    super(message);
    this.name = 'JobFailure';
    this.code = code;
    this.result = result;
  }
}

export interface RunContext {
  signal: AbortSignal;
  /** Progress so far; written to the store now and then. */
  progress(p: Progress): void;
  /** The step a maintenance job is at; written to the store at once. */
  phase(name: string): void;
}

/**
 * Runs one claimed job and returns its outcome, or throws (a JobFailure for an expected failure,
 * anything else is recorded as INTERNAL_ERROR). It writes no status: the queue records the outcome.
 */
export type JobRunner = (job: Job, context: RunContext) => Promise<JobOutcome>;

/**
 * Jobs from submission to their final state: claimed with a lease that heartbeats renew, one job
 * per repository at a time, accounts served round-robin, a queue limit per account. One
 * implementation (leased-queue.ts) serves both shapes: the store it runs on decides whether this
 * process is alone (SQLite) or one of several instances (PostgreSQL).
 */
export interface JobQueue {
  /** Queues a backup; null (nothing queued) when its account already has as many queued as it may. */
  submitBackup(job: NewBackup): Promise<BackupJob | null>;
  submitRestore(job: NewRestore): Promise<RestoreJob | null>;
  /** Queues a prune or check, unless one of its repository is queued or running (then that one, `inserted` false). */
  submitMaintenance(job: NewMaintenance): Promise<{ job: MaintenanceJob; inserted: boolean } | null>;
  /**
   * Cancels a queued job at once, or asks the instance running it to stop (it records the job
   * cancelled within seconds). False when the job had already finished.
   */
  cancel(id: string): Promise<boolean>;
  /** Jobs running on this instance now (the other instances' are not counted). */
  readonly runningHere: number;
  /** Resolves true once the job is in a final state, false after `timeoutMs`. */
  waitSettled(id: string, timeoutMs: number): Promise<boolean>;
  /** Recovers what a stopped instance left running and starts taking jobs. */
  start(): Promise<{ interrupted: string[]; queued: number }>;
  /**
   * Stops taking jobs and interrupts those running here (recorded INTERRUPTED); queued ones stay
   * for other instances or the next start. A job still running after `timeoutMs` is recorded
   * interrupted anyway.
   */
  close(timeoutMs?: number): Promise<void>;
}

import type { BackupResult, JobError, JobKind, JobStatus, MaintenanceResult, Progress, RestoreResult, Store, Warnings } from '../store/index.ts';
import type { StatusChange } from '../store/store.ts';

/**
 * The job state machine, the only writer of job status (through the store's one compare-and-set,
 * JobStore.transition; a test checks nothing else calls it):
 *
 *   queued ──start──▶ running ──complete──▶ completed
 *     │                 ├──fail──────────▶ failed
 *     │                 └──interrupt─────▶ failed (INTERRUPTED, once)
 *     └──────cancel─────┴──cancel────────▶ cancelled
 *
 * A job is created queued (JobStore.insert*). Each step says whether it happened: when two
 * instances race for one job, exactly one wins. Every step into a final state tells waiting
 * instances through the store's events. A step that happened is told to the caller's observer
 * first (metrics and the audit log, server/events.ts): only the winner of a race is told, so each
 * change is reported once across instances, and before anyone waiting for the job hears of it.
 */

export interface JobRef {
  kind: JobKind;
  id: string;
}

export interface Claim {
  /** The instance taking the job. */
  owner: string;
  /** How long the claim holds without a renewal. */
  leaseMs: number;
  /** Jobs one account may have running at once (on every instance together). */
  accountCap: number;
}

/** Told of each change of status the caller made, once it is stored; it must not throw. */
export type StatusObserver = (job: JobRef, to: JobStatus) => Promise<void>;

export const INTERRUPTED: JobError = { code: 'INTERRUPTED', message: 'The server running the job stopped while the job was running.' };

async function settle(store: Store, change: StatusChange, observer?: StatusObserver): Promise<boolean> {
  if (!(await store.jobs.transition(change))) return false;
  await observer?.({ kind: change.kind, id: change.id }, change.to);
  // Waiters on other instances re-check on their own timer if this notice is lost.
  await store.events.publish({ type: 'settled', id: change.id }).catch(() => {});
  return true;
}

/** queued → running, unless the job's repository is busy or its account is at its cap. */
export async function start(store: Store, job: JobRef, claim: Claim, observer?: StatusObserver): Promise<boolean> {
  if (!(await store.jobs.transition({ ...job, from: ['queued'], to: 'running', claim }))) return false;
  await observer?.({ kind: job.kind, id: job.id }, 'running');
  return true;
}

/** running → completed with the job's result, by the instance holding it. */
export function complete(
  store: Store,
  job: JobRef,
  owner: string,
  outcome: { result: BackupResult | RestoreResult | MaintenanceResult; progress: Progress; warnings: Warnings },
  observer?: StatusObserver,
): Promise<boolean> {
  return settle(store, { ...job, from: ['running'], to: 'completed', owner, error: null, ...outcome }, observer);
}

/** running → failed with the reason (and what it found, when it says), by the instance holding it. */
export function fail(store: Store, job: JobRef, owner: string, error: JobError, observer?: StatusObserver, result?: MaintenanceResult): Promise<boolean> {
  return settle(store, { ...job, from: ['running'], to: 'failed', owner, error, ...(result ? { result } : {}) }, observer);
}

/**
 * → cancelled: a queued job by anyone (no runner has it); a running one only by the instance
 * holding it (others ask it to, see JobStore.requestCancel).
 */
export function cancel(store: Store, job: JobRef, owner: string | null, observer?: StatusObserver): Promise<boolean> {
  const from: JobStatus[] = owner === null ? ['queued'] : ['running'];
  return settle(store, { ...job, from, to: 'cancelled', error: null, ...(owner === null ? {} : { owner }) }, observer);
}

/**
 * running → failed/INTERRUPTED: by its holder (stopping), by another instance once the holder's
 * lease ran out, or at start-up by the only process on the data directory (`anyHolder`).
 */
export function interrupt(
  store: Store,
  job: JobRef,
  by: { owner: string } | { leaseExpired: true } | { anyHolder: true },
  observer?: StatusObserver,
): Promise<boolean> {
  const guard = 'owner' in by ? { owner: by.owner } : 'leaseExpired' in by ? { leaseExpired: true } : {};
  return settle(store, { ...job, from: ['running'], to: 'failed', error: INTERRUPTED, ...guard }, observer);
}

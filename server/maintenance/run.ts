import type { Logger } from 'pino';
import { check, prune, type CheckResult, type PruneResult, type Repository } from '../engine/index.ts';
import { pathToText } from '../escaped-path.ts';
import type { JobOutcome, RunContext } from '../jobs/queue.ts';
import { JobFailure } from '../jobs/queue.ts';
import { NO_WARNINGS, type MaintenanceJob, type Progress, type Store } from '../store/index.ts';

export interface MaintenanceDeps {
  store: Store;
  logger: Logger;
  open(accountId: string, destination: string): Promise<Repository>;
}

/** "10%" → 0.1 (the spec's pattern has checked the form). */
export function subsetShare(subset: string | null): number {
  return subset === null ? 0 : Number(subset.slice(0, -1)) / 100;
}

/** The contract's PruneResult from the engine's. */
function pruneOutcome(r: PruneResult): Record<string, unknown> {
  return {
    dry_run: r.dryRun,
    backups: r.snapshots,
    packs_deleted: r.packsDeleted + r.unindexedPacks,
    packs_rewritten: r.packsRepacked,
    packs_kept: r.packsKept,
    bytes_deleted: r.bytesDeleted,
    bytes_rewritten: r.bytesRewritten,
    bytes_written: r.bytesWritten,
    bytes_before: r.bytesBefore,
    bytes_remaining: r.bytesRemaining,
  };
}

/** The contract's CheckResult from the engine's, snapshots named by the backups that made them. */
async function checkOutcome(store: Store, job: MaintenanceJob, r: CheckResult): Promise<Record<string, unknown>> {
  const bySnapshot = new Map<string, string>();
  if (r.affected.length > 0) {
    for (const b of await store.jobs.completedBackups(job.accountId, { destination: job.destination })) if (b.snapshotId) bySnapshot.set(b.snapshotId, b.id);
  }
  return {
    ok: r.ok,
    backups_checked: r.snapshots,
    packs_checked: r.packs,
    packs_read: r.packsRead,
    bytes_read: r.bytesRead,
    problems: { count: r.problemCount, items: r.problems.map((p) => ({ message: p.message.slice(0, 1000) })) },
    affected: r.affected.map((a) => {
      const whole = a.paths.some((p) => p.length === 0);
      const paths = a.paths.filter((p) => p.length > 0).map(pathToText);
      return { backup_id: bySnapshot.get(a.snapshotId) ?? null, whole_backup: whole, paths, path_count: whole ? a.pathCount - 1 : a.pathCount };
    }),
    unreferenced_bytes: r.unindexedBytes,
    reclaimable_bytes: r.unusedBytes,
  };
}

/**
 * Runs a prune or check job with the engine. Progress counts the packs of the current phase; the
 * phase itself goes to the store as it changes. A check that finds problems fails the job with
 * CORRUPT_DATA and keeps what it found as the job's result.
 */
export async function runMaintenance(deps: MaintenanceDeps, job: MaintenanceJob, context: RunContext): Promise<JobOutcome> {
  let last: Progress = { filesDone: 0, filesTotal: 0, bytesDone: 0, bytesTotal: 0 };
  let phase = '';
  const onProgress = (p: { phase: string; packsDone: number; packsTotal: number }): void => {
    if (p.phase !== phase) context.phase((phase = p.phase));
    last = { filesDone: p.packsDone, filesTotal: p.packsTotal, bytesDone: 0, bytesTotal: 0 };
    context.progress(last);
  };
  const repo = await deps.open(job.accountId, job.destination);
  try {
    if (job.operation === 'prune') {
      const r = await prune(repo, { dryRun: job.dryRun, signal: context.signal, onProgress });
      deps.logger.info({ job_id: job.id, account: job.accountId, dry_run: r.dryRun, bytes_deleted: r.bytesDeleted, bytes_remaining: r.bytesRemaining }, 'prune completed');
      return { result: { outcome: pruneOutcome(r) }, progress: last, warnings: NO_WARNINGS };
    }
    const r = await check(repo, { readData: job.readData, readDataSubset: job.readData ? 1 : subsetShare(job.readDataSubset), signal: context.signal, onProgress });
    const outcome = await checkOutcome(deps.store, job, r);
    if (!r.ok) {
      deps.logger.error({ job_id: job.id, account: job.accountId, problems: r.problemCount, first: r.problems.slice(0, 5) }, 'check found problems');
      throw new JobFailure('CORRUPT_DATA', `The check found ${r.problemCount} problem(s); result.affected names the backups and paths concerned.`, { outcome });
    }
    return { result: { outcome }, progress: last, warnings: NO_WARNINGS };
  } finally {
    await repo.close();
  }
}

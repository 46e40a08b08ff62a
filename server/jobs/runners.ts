import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import { blockedAncestor, confine } from '../allowed-roots.ts';
import type { Destinations } from '../destinations/registry.ts';
import { EngineError, backup, restore, type EntryRecord, type Repository, type Warnings as EngineWarnings } from '../engine/index.ts';
import { StorageFullError } from '../engine/storage/errors.ts';
import { pathToText, textToPath } from '../escaped-path.ts';
import type { RepositoryKeys } from '../keys/repository-keys.ts';
import { StoreFullError, type BackupJob, type FileRecord, type Progress, type RestoreJob, type Store, type Warnings } from '../store/index.ts';
import { ListingWriter } from './listing-writer.ts';
import { JobFailure, type JobOutcome, type JobRunner, type RunContext } from './queue.ts';
import { RepositoryOpener } from './repositories.ts';
import { runMaintenance } from '../maintenance/run.ts';

export interface RunnerDeps {
  store: Store;
  dataDir: string;
  allowedRoots: readonly string[];
  keys: RepositoryKeys;
  /** Where each destination's repositories are: the runner asks it for an account's Backend. */
  destinations: Pick<Destinations, 'has' | 'backendFor' | 'localRoots'>;
  logger: Logger;
}

/**
 * Engine failures in the job vocabulary the contract documents (catalogue codes, plus
 * CORRUPT_DATA). Anything else is INTERNAL_ERROR: its details go to the log, not to the client.
 */
const ENGINE_FAILURES: Record<string, { code: string; message: string }> = {
  SOURCE_NOT_FOUND: { code: 'INVALID_SOURCE', message: 'The source no longer exists.' },
  SOURCE_UNREADABLE: { code: 'INVALID_SOURCE', message: 'The source cannot be read.' },
  PATH_NOT_FOUND: { code: 'INVALID_SOURCE', message: 'An entry of paths matches nothing in the backup.' },
  RESTORE_CONFLICT: { code: 'INVALID_TARGET', message: 'The target cannot be written.' },
  CORRUPT_DATA: { code: 'CORRUPT_DATA', message: 'Stored data failed its integrity check.' },
  STORAGE_FULL: { code: 'STORAGE_FULL', message: 'No space is left on the storage; nothing half-written was kept. Free space and run the job again.' },
  DESTINATION_UNAVAILABLE: { code: 'DESTINATION_UNAVAILABLE', message: 'The destination storage cannot be reached or written.' },
  LOCK_LOST: { code: 'DESTINATION_UNAVAILABLE', message: 'The destination storage stopped taking the job\'s lock; it stopped before changing anything more.' },
  REPOSITORY_BUSY: { code: 'MAINTENANCE_RUNNING', message: 'Another server is running a prune or check of this repository.' },
};

/** A failure of the engine, the storage or the store in the job vocabulary; anything else unchanged. */
function inJobTerms(err: unknown, logger: Logger, jobId: string): unknown {
  if (err instanceof JobFailure) return err;
  const known = err instanceof EngineError ? ENGINE_FAILURES[err.code] : undefined;
  if (known) {
    if (known.code === 'CORRUPT_DATA') logger.error({ err, job_id: jobId }, 'stored data failed its integrity check');
    // The storage's own reason (a refused credential, a missing bucket, a timeout) is for the operator's log only.
    else logger.info({ job_id: jobId, code: known.code, reason: (err as Error).message }, 'job failed');
    return new JobFailure(known.code, known.message);
  }
  if (outOfSpace(err)) return new JobFailure('STORAGE_FULL', ENGINE_FAILURES.STORAGE_FULL!.message);
  return err;
}

/** Whether the failure, or one it wraps, is a full disk (the repository's storage or the store's). */
function outOfSpace(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const errno = (e as NodeJS.ErrnoException).code;
    if (e instanceof StorageFullError || e instanceof StoreFullError || errno === 'ENOSPC' || errno === 'EDQUOT') return true;
  }
  return false;
}

function toFileRecord(e: EntryRecord): FileRecord {
  return {
    path: Buffer.from(e.path),
    type: e.type,
    sizeBytes: e.size,
    mode: e.mode,
    modifiedAt: e.mtime.toISOString(),
    sha256: e.sha256,
    linkTarget: e.linkTarget === undefined ? null : Buffer.from(e.linkTarget),
  };
}

/** The engine's warnings with their byte paths in the API's text form. */
function toJobWarnings(w: EngineWarnings): Warnings {
  return { count: w.count, items: w.items.map((i) => ({ path: pathToText(i.path), reason: i.reason })) };
}

/** The repository of an account and destination, opened with its key from the Store (made on first use). */
async function openRepository(deps: RunnerDeps, accountId: string, destination: string): Promise<Repository> {
  return (await new RepositoryOpener(deps.destinations, deps.keys).open(accountId, destination))!;
}

/** Progress reported to the queue, with the last value kept for the job's final counts. */
function tracked(context: RunContext): { report: (p: Progress) => void; latest: () => Progress } {
  let last: Progress = { filesDone: 0, filesTotal: 0, bytesDone: 0, bytesTotal: 0 };
  return {
    report: (p) => {
      last = { ...p };
      context.progress(p);
    },
    latest: () => last,
  };
}

async function runBackup(deps: RunnerDeps, job: BackupJob, context: RunContext): Promise<JobOutcome> {
  // Checked again at run time: the roots or the filesystem may have changed since the request.
  const place = await confine(job.source, deps.allowedRoots, [deps.dataDir, ...deps.destinations.localRoots()]);
  if (!place.allowed) throw new JobFailure('SOURCE_NOT_ALLOWED', 'The source is outside the allowed roots.');
  if (!place.exists) throw new JobFailure('INVALID_SOURCE', `The source ${job.source} does not exist.`);
  const progress = tracked(context);
  const repo = await openRepository(deps, job.accountId, job.destination);
  try {
    // The listing goes to the store while the backup runs (the engine waits for each batch), so
    // nothing is held in memory or read back afterwards; a backup that does not complete keeps none.
    const listing = new ListingWriter(deps.store, job.id);
    const result = await backup(repo, {
      source: place.resolved,
      compression: job.compression,
      encryption: job.encryption,
      deduplication: job.deduplication,
      signal: context.signal,
      onProgress: progress.report,
      onEntries: (batch) => listing.add(batch.map(toFileRecord)),
    });
    await listing.finish();
    const warnings = toJobWarnings(result.warnings);
    if (warnings.count > 0) deps.logger.warn({ job_id: job.id, count: warnings.count, first: warnings.items.slice(0, 20) }, 'backup left entries out');
    deps.logger.info({ job_id: job.id, account: job.accountId, files: result.files, directories: result.directories, size_bytes: result.sizeBytes, stored_bytes: result.storedBytes, warnings: warnings.count }, 'backup completed');
    return {
      result: { snapshotId: result.snapshotId, filesBackedUp: result.files, sizeBytes: result.sizeBytes, storedBytes: result.storedBytes },
      progress: progress.latest(), // the engine's last report: done equals total
      warnings,
    };
  } finally {
    await repo.close();
  }
}

async function runRestore(deps: RunnerDeps, job: RestoreJob, context: RunContext): Promise<JobOutcome> {
  const source = await deps.store.jobs.getBackup(job.backupId, job.accountId);
  if (!source || source.status !== 'completed' || !source.snapshotId) {
    throw new JobFailure('BACKUP_NOT_COMPLETED', 'The backup to restore is not completed.');
  }
  const place = await confine(job.targetPath, deps.allowedRoots, [deps.dataDir, ...deps.destinations.localRoots()]);
  if (!place.allowed) throw new JobFailure('TARGET_NOT_ALLOWED', 'The target is outside the allowed roots.');
  if (place.exists && !place.isDirectory) throw new JobFailure('INVALID_TARGET', 'The target exists and is not a directory.');
  const blocked = job.paths ? await blockedAncestor(place.resolved, job.paths) : null;
  if (blocked) throw new JobFailure('INVALID_TARGET', `${blocked} in the target is not a directory.`);
  await mkdir(place.resolved, { recursive: true });
  const progress = tracked(context);
  const repo = await openRepository(deps, job.accountId, source.destination);
  try {
    const result = await restore(repo, source.snapshotId, {
      target: place.resolved,
      ...(job.paths ? { paths: job.paths.map(textToPath) } : {}),
      overwrite: job.overwrite,
      signal: context.signal,
      onProgress: progress.report,
    });
    const warnings = toJobWarnings(result.warnings);
    deps.logger.info({ job_id: job.id, account: job.accountId, files: result.filesRestored, skipped: result.filesSkipped, warnings: warnings.count }, 'restore completed');
    return {
      result: { filesRestored: result.filesRestored, filesSkipped: result.filesSkipped, sizeBytes: result.sizeBytes },
      progress: progress.latest(),
      warnings,
    };
  } finally {
    await repo.close();
  }
}

/** The runner the queue calls: runs the job with the engine; the queue records the outcome. */
export function createJobRunner(deps: RunnerDeps): JobRunner {
  return async (job, context) => {
    try {
      if (job.kind === 'maintenance') return await runMaintenance({ store: deps.store, logger: deps.logger, open: (a, d) => openRepository(deps, a, d) }, job, context);
      return job.kind === 'backup' ? await runBackup(deps, job, context) : await runRestore(deps, job, context);
    } catch (err) {
      throw inJobTerms(err, deps.logger, job.id);
    }
  };
}

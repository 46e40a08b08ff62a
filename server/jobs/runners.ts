import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import { blockedAncestor, confine } from '../allowed-roots.ts';
import { EngineError, Repository, backup, restore, type EntryRecord, type Warnings } from '../engine/index.ts';
import { LocalBackend } from '../engine/storage/local.ts';
import { pathToText, textToPath } from '../escaped-path.ts';
import { transaction } from '../store/db.ts';
import type { FileRecord, JobError, JobKind, JobWarnings, Store } from '../store/index.ts';
import { ProgressWriter } from './progress-writer.ts';
import { ABORT_SHUTDOWN, type JobRunner } from './queue.ts';
import { isDestination, repositoryDir, repositoryKey } from './repositories.ts';

export interface RunnerDeps {
  store: Store;
  dataDir: string;
  allowedRoots: readonly string[];
  secret: { password: string };
  logger: Logger;
  /** Test hook: how often progress is written (default 500 ms). */
  progressIntervalMs?: number;
}

/** A failure the job records as its `error` (codes as the API reports them). */
class JobFailure extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * Engine failures in the job vocabulary the contract documents (catalogue codes, plus
 * CORRUPT_DATA). Anything else is INTERNAL_ERROR: its details go to the log, not to the client.
 */
const ENGINE_FAILURES: Record<string, JobError> = {
  SOURCE_NOT_FOUND: { code: 'INVALID_SOURCE', message: 'The source no longer exists.' },
  SOURCE_UNREADABLE: { code: 'INVALID_SOURCE', message: 'The source cannot be read.' },
  PATH_NOT_FOUND: { code: 'INVALID_SOURCE', message: 'An entry of paths matches nothing in the backup.' },
  RESTORE_CONFLICT: { code: 'INVALID_TARGET', message: 'The target cannot be written.' },
  CORRUPT_DATA: { code: 'CORRUPT_DATA', message: 'Stored data failed its integrity check.' },
  STORAGE_FULL: { code: 'STORAGE_FULL', message: 'No space is left on the storage; nothing half-written was kept. Free space and run the job again.' },
  DESTINATION_UNAVAILABLE: { code: 'DESTINATION_UNAVAILABLE', message: 'The destination storage cannot be reached or written.' },
};

/** The engine's warnings with their byte paths in the API's text form. */
function toJobWarnings(w: Warnings): JobWarnings {
  return { count: w.count, items: w.items.map((i) => ({ path: pathToText(i.path), reason: i.reason })) };
}

function toFileRecord(e: EntryRecord): FileRecord {
  return {
    path: pathToText(e.path),
    type: e.type,
    sizeBytes: e.size,
    mode: e.mode,
    modifiedAt: e.mtime.toISOString(),
    sha256: e.sha256,
    linkTarget: e.linkTarget ? pathToText(e.linkTarget) : null,
  };
}

async function openRepository(deps: RunnerDeps, accountId: string, destination: string): Promise<Repository> {
  if (!isDestination(destination)) throw new JobFailure('DESTINATION_UNAVAILABLE', `Destination ${destination} is not configured.`);
  const dir = repositoryDir(deps.dataDir, accountId, destination);
  await mkdir(dir, { recursive: true });
  const backend = new LocalBackend(dir);
  return Repository.open(backend, await repositoryKey(backend, deps.secret, accountId, destination));
}

async function runBackup(deps: RunnerDeps, id: string, signal: AbortSignal): Promise<void> {
  const { store } = deps;
  const job = store.jobs.getBackup(id);
  if (!job || !store.jobs.markRunning('backup', id)) return;
  // Checked again at run time: the roots or the filesystem may have changed since the request.
  const place = await confine(job.source, deps.allowedRoots, [deps.dataDir]);
  if (!place.allowed) throw new JobFailure('SOURCE_NOT_ALLOWED', 'The source is outside the allowed roots.');
  if (!place.exists) throw new JobFailure('INVALID_SOURCE', `The source ${job.source} does not exist.`);
  const progress = new ProgressWriter(store, 'backup', id, deps.progressIntervalMs);
  const repo = await openRepository(deps, job.accountId, job.destination);
  try {
    const entries: FileRecord[] = [];
    const result = await backup(repo, {
      source: place.resolved,
      compression: job.compression,
      encryption: job.encryption,
      deduplication: job.deduplication,
      signal,
      onProgress: progress.report,
      onEntries: (batch) => {
        for (const e of batch) entries.push(toFileRecord(e));
      },
    });
    const warnings = toJobWarnings(result.warnings);
    if (warnings.count > 0) deps.logger.warn({ job_id: id, count: warnings.count, first: warnings.items.slice(0, 20) }, 'backup left entries out');
    transaction(store.db, () => {
      store.files.insertListing(id, entries);
      store.jobs.completeBackup(id, {
        snapshotId: result.snapshotId,
        filesBackedUp: result.files,
        sizeBytes: result.sizeBytes,
        storedBytes: result.storedBytes,
        progress: progress.latest, // the engine's last report: done equals total
        warnings,
      });
    });
    deps.logger.info({ job_id: id, account: job.accountId, files: result.files, directories: result.directories, size_bytes: result.sizeBytes, stored_bytes: result.storedBytes, warnings: warnings.count }, 'backup completed');
  } finally {
    await repo.close();
  }
}

async function runRestore(deps: RunnerDeps, id: string, signal: AbortSignal): Promise<void> {
  const { store } = deps;
  const job = store.jobs.getRestore(id);
  if (!job || !store.jobs.markRunning('restore', id)) return;
  const source = store.jobs.getBackup(job.backupId, job.accountId);
  if (!source || source.status !== 'completed' || !source.snapshotId) {
    throw new JobFailure('BACKUP_NOT_COMPLETED', 'The backup to restore is not completed.');
  }
  const place = await confine(job.targetPath, deps.allowedRoots, [deps.dataDir]);
  if (!place.allowed) throw new JobFailure('TARGET_NOT_ALLOWED', 'The target is outside the allowed roots.');
  if (place.exists && !place.isDirectory) throw new JobFailure('INVALID_TARGET', 'The target exists and is not a directory.');
  const blocked = job.paths ? await blockedAncestor(place.resolved, job.paths) : null;
  if (blocked) throw new JobFailure('INVALID_TARGET', `${blocked} in the target is not a directory.`);
  await mkdir(place.resolved, { recursive: true });
  const progress = new ProgressWriter(store, 'restore', id, deps.progressIntervalMs);
  const repo = await openRepository(deps, job.accountId, source.destination);
  try {
    const result = await restore(repo, source.snapshotId, {
      target: place.resolved,
      ...(job.paths ? { paths: job.paths.map(textToPath) } : {}),
      overwrite: job.overwrite,
      signal,
      onProgress: progress.report,
    });
    const warnings = toJobWarnings(result.warnings);
    store.jobs.completeRestore(id, {
      filesRestored: result.filesRestored,
      filesSkipped: result.filesSkipped,
      sizeBytes: result.sizeBytes,
      progress: progress.latest,
      warnings,
    });
    deps.logger.info({ job_id: id, account: job.accountId, files: result.filesRestored, skipped: result.filesSkipped, warnings: warnings.count }, 'restore completed');
  } finally {
    await repo.close();
  }
}

function describeFailure(err: unknown, signal: AbortSignal): { status: 'failed' | 'cancelled'; error: JobError | null; unexpected: boolean } {
  if (signal.aborted) {
    return signal.reason === ABORT_SHUTDOWN
      ? { status: 'failed', error: { code: 'INTERRUPTED', message: 'The server stopped while the job was running.' }, unexpected: false }
      : { status: 'cancelled', error: null, unexpected: false };
  }
  if (err instanceof JobFailure) return { status: 'failed', error: { code: err.code, message: err.message }, unexpected: false };
  const known = err instanceof EngineError ? ENGINE_FAILURES[err.code] : undefined;
  if (known) return { status: 'failed', error: known, unexpected: known.code === 'CORRUPT_DATA' };
  return { status: 'failed', error: { code: 'INTERNAL_ERROR', message: 'The job failed because of an internal error.' }, unexpected: true };
}

/** The runner the queue calls: runs the job with the engine and records every outcome in the store. */
export function createJobRunner(deps: RunnerDeps): JobRunner {
  return async (kind: JobKind, id: string, signal: AbortSignal) => {
    try {
      if (kind === 'backup') await runBackup(deps, id, signal);
      else await runRestore(deps, id, signal);
    } catch (err) {
      const outcome = describeFailure(err, signal);
      if (outcome.unexpected) deps.logger.error({ err, job_id: id }, 'job failed');
      else deps.logger.info({ job_id: id, status: outcome.status, code: outcome.error?.code }, `${kind} ${outcome.status}`);
      deps.store.jobs.finish(kind, id, outcome.status, outcome.error);
    }
  };
}

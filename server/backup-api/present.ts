import type { components } from '../../generated/backup-types.ts';
import { pathToText } from '../escaped-path.ts';
import { settledData } from '../http/envelope.ts';
import type { Destinations } from '../destinations/registry.ts';
import type { BackupJob, FileRecord, MaintenanceJob, RestoreJob } from '../store/index.ts';
import { FINAL_STATUSES } from '../store/records.ts';

type Schemas = components['schemas'];

/** Whole seconds from start to finish, or to now while the job runs; 0 before it starts. */
export function durationSeconds(job: { startedAt: string | null; finishedAt: string | null }, now = Date.now()): number {
  if (!job.startedAt) return 0;
  const end = job.finishedAt ? Date.parse(job.finishedAt) : now;
  return Math.max(0, Math.round((end - Date.parse(job.startedAt)) / 1000));
}

function progress(p: BackupJob['progress']): Schemas['JobProgress'] {
  return { files_done: p.filesDone, files_total: p.filesTotal, bytes_done: p.bytesDone, bytes_total: p.bytesTotal };
}

/**
 * While a backup runs, its counts so far come from the progress it reports. `destination_kind`
 * is where the destination is kept under the current configuration.
 */
export function presentBackup(job: BackupJob, destinations: Pick<Destinations, 'kindOf'>): Schemas['BackupJob'] {
  if (!FINAL_STATUSES.includes(job.status)) return presentBackupNow(job, destinations);
  // A finished job's record never changes (the store answers it from its cache): presented once,
  // and checked against the contract once.
  const made = presentedBackups.get(job);
  if (made?.destinations === destinations) return made.body;
  const body = settledData(structuredClone(presentBackupNow(job, destinations))); // a copy: the record's parts stay unfrozen
  presentedBackups.set(job, { destinations, body });
  return body;
}

const presentedBackups = new WeakMap<BackupJob, { destinations: object; body: Schemas['BackupJob'] }>();

function presentBackupNow(job: BackupJob, destinations: Pick<Destinations, 'kindOf'>): Schemas['BackupJob'] {
  const running = job.status === 'running';
  return {
    id: job.id,
    status: job.status,
    source: job.source,
    destination: job.destination,
    options: { compression: job.compression, encryption: job.encryption, deduplication: job.deduplication },
    files_backed_up: running ? job.progress.filesDone : job.filesBackedUp,
    size_bytes: running ? job.progress.bytesDone : job.sizeBytes,
    stored_bytes: job.storedBytes,
    duration_seconds: durationSeconds(job),
    progress: progress(job.progress),
    created_at: job.createdAt,
    started_at: job.startedAt,
    finished_at: job.finishedAt,
    error: job.error,
    warnings: job.warnings,
    destination_kind: destinations.kindOf(job.destination),
  };
}

export function presentRestore(job: RestoreJob): Schemas['RestoreJob'] {
  return {
    id: job.id,
    backup_id: job.backupId,
    status: job.status,
    target_path: job.targetPath,
    paths: job.paths,
    overwrite: job.overwrite,
    files_restored: job.filesRestored,
    files_skipped: job.filesSkipped,
    size_bytes: job.sizeBytes,
    duration_seconds: durationSeconds(job),
    progress: progress(job.progress),
    created_at: job.createdAt,
    started_at: job.startedAt,
    finished_at: job.finishedAt,
    error: job.error,
    warnings: job.warnings,
  };
}

/** Permission bits and set-id/sticky bits as four octal digits, e.g. "0644". */
export function octalMode(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

export function presentFile(f: FileRecord): Schemas['FileEntry'] {
  return {
    path: pathToText(f.path),
    type: f.type,
    size_bytes: f.sizeBytes,
    mode: octalMode(f.mode),
    modified_at: f.modifiedAt,
    sha256: f.type === 'file' ? f.sha256 : null,
    link_target: f.type === 'symlink' && f.linkTarget ? pathToText(f.linkTarget) : null,
  };
}

export function presentMaintenance(job: MaintenanceJob): Schemas['MaintenanceJob'] {
  return {
    id: job.id,
    kind: job.operation,
    status: job.status,
    destination: job.destination,
    trigger: job.trigger,
    options: { dry_run: job.dryRun, read_data: job.readData, read_data_subset: job.readDataSubset },
    progress: { phase: job.phase as Schemas['MaintenanceJob']['progress']['phase'], packs_done: job.progress.filesDone, packs_total: job.progress.filesTotal },
    result: job.outcome as Schemas['MaintenanceJob']['result'],
    duration_seconds: durationSeconds(job),
    created_at: job.createdAt,
    started_at: job.startedAt,
    finished_at: job.finishedAt,
    error: job.error,
  };
}

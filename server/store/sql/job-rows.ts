import type { BackupJob, JobKind, JobStatus, MaintenanceJob, RestoreJob } from '../records.ts';
import type { Row } from './executor.ts';

/** The SELECT of each job kind: the common `jobs` row joined with the kind's own table. */
export const SELECT: Record<JobKind, string> = {
  backup: `SELECT j.*, d.source, d.destination, d.compression, d.encryption, d.deduplication,
      d.files_backed_up, d.size_bytes, d.stored_bytes, d.snapshot_id
    FROM jobs j JOIN backups d ON d.id = j.id AND d.deleted_at IS NULL`,
  restore: `SELECT j.*, d.backup_id, d.target_path, d.paths, d.overwrite, d.files_restored, d.files_skipped, d.size_bytes
    FROM jobs j JOIN restores d ON d.id = j.id`,
  maintenance: `SELECT j.*, d.operation, d.destination, d.trigger, d.dry_run, d.read_data, d.read_data_subset, d.phase, d.result
    FROM jobs j JOIN maintenance d ON d.id = j.id`,
};

const num = (v: unknown): number => Number(v ?? 0);

function common(row: Row) {
  return {
    id: row.id as string,
    accountId: row.account_id as string,
    repository: row.repository as string,
    status: row.status as JobStatus,
    createdAt: row.created_at as string,
    startedAt: (row.started_at as string | null) ?? null,
    finishedAt: (row.finished_at as string | null) ?? null,
    progress: { filesDone: num(row.files_done), filesTotal: num(row.files_total), bytesDone: num(row.bytes_done), bytesTotal: num(row.bytes_total) },
    error: row.error_code ? { code: row.error_code as string, message: (row.error_message as string | null) ?? '' } : null,
    warnings: { count: num(row.warnings_count), items: JSON.parse((row.warnings as string | null) ?? '[]') as BackupJob['warnings']['items'] },
  };
}

export function toBackup(row: Row): BackupJob {
  return {
    ...common(row),
    kind: 'backup',
    source: row.source as string,
    destination: row.destination as string,
    compression: row.compression as BackupJob['compression'],
    encryption: num(row.encryption) === 1,
    deduplication: num(row.deduplication) === 1,
    filesBackedUp: num(row.files_backed_up),
    sizeBytes: num(row.size_bytes),
    storedBytes: num(row.stored_bytes),
    snapshotId: (row.snapshot_id as string | null) ?? null,
  };
}

export function toRestore(row: Row): RestoreJob {
  return {
    ...common(row),
    kind: 'restore',
    backupId: row.backup_id as string,
    targetPath: row.target_path as string,
    paths: row.paths ? (JSON.parse(row.paths as string) as string[]) : null,
    overwrite: row.overwrite as RestoreJob['overwrite'],
    filesRestored: num(row.files_restored),
    filesSkipped: num(row.files_skipped),
    sizeBytes: num(row.size_bytes),
  };
}

export function toMaintenance(row: Row): MaintenanceJob {
  return {
    ...common(row),
    kind: 'maintenance',
    operation: row.operation as MaintenanceJob['operation'],
    destination: row.destination as string,
    trigger: row.trigger as MaintenanceJob['trigger'],
    dryRun: num(row.dry_run) === 1,
    readData: num(row.read_data) === 1,
    readDataSubset: (row.read_data_subset as string | null) ?? null,
    phase: (row.phase as string | null) ?? null,
    outcome: row.result ? (JSON.parse(row.result as string) as Record<string, unknown>) : null,
  };
}

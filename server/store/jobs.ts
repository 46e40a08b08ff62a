import type { DatabaseSync } from 'node:sqlite';
import { prepare, transaction } from './db.ts';

export type JobKind = 'backup' | 'restore';
export type JobStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
export const FINAL_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'cancelled'];

export interface Progress {
  filesDone: number;
  filesTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

export interface JobError {
  code: string;
  message: string;
}

/** Entries a completed job left out: the total, and the first 100 with the reason (paths in the API's escaped text form). */
export interface JobWarnings {
  count: number;
  items: { path: string; reason: string }[];
}

const NO_WARNINGS: JobWarnings = { count: 0, items: [] };

interface CommonJob {
  id: string;
  accountId: string;
  status: JobStatus;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  progress: Progress;
  error: JobError | null;
  warnings: JobWarnings;
}

export interface BackupJob extends CommonJob {
  source: string;
  destination: string;
  compression: 'zstd' | 'gzip' | 'none';
  encryption: boolean;
  deduplication: boolean;
  filesBackedUp: number;
  sizeBytes: number;
  storedBytes: number;
  snapshotId: string | null;
}

export interface RestoreJob extends CommonJob {
  backupId: string;
  targetPath: string;
  paths: string[] | null;
  overwrite: 'never' | 'if_changed' | 'always';
  filesRestored: number;
  filesSkipped: number;
  sizeBytes: number;
}

type Row = Record<string, string | number | null>;

function common(row: Row): CommonJob {
  return {
    id: row.id as string,
    accountId: row.account_id as string,
    status: row.status as JobStatus,
    createdAt: row.created_at as string,
    startedAt: row.started_at as string | null,
    finishedAt: row.finished_at as string | null,
    progress: {
      filesDone: row.files_done as number,
      filesTotal: row.files_total as number,
      bytesDone: row.bytes_done as number,
      bytesTotal: row.bytes_total as number,
    },
    error: row.error_code ? { code: row.error_code as string, message: (row.error_message as string) ?? '' } : null,
    warnings: row.warnings ? (JSON.parse(row.warnings as string) as JobWarnings) : NO_WARNINGS,
  };
}

function toBackup(row: Row): BackupJob {
  return {
    ...common(row),
    source: row.source as string,
    destination: row.destination as string,
    compression: row.compression as BackupJob['compression'],
    encryption: row.encryption === 1,
    deduplication: row.deduplication === 1,
    filesBackedUp: row.files_backed_up as number,
    sizeBytes: row.size_bytes as number,
    storedBytes: row.stored_bytes as number,
    snapshotId: row.snapshot_id as string | null,
  };
}

function toRestore(row: Row): RestoreJob {
  return {
    ...common(row),
    backupId: row.backup_id as string,
    targetPath: row.target_path as string,
    paths: row.paths === null ? null : (JSON.parse(row.paths as string) as string[]),
    overwrite: row.overwrite as RestoreJob['overwrite'],
    filesRestored: row.files_restored as number,
    filesSkipped: row.files_skipped as number,
    sizeBytes: row.size_bytes as number,
  };
}

const TABLE: Record<JobKind, string> = { backup: 'backup_jobs', restore: 'restore_jobs' };

/** Backup and restore jobs. State changes are guarded by the current status, so races lose cleanly. */
export class JobStore {
  private readonly db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  insertBackup(job: Pick<BackupJob, 'id' | 'accountId' | 'source' | 'destination' | 'compression' | 'encryption' | 'deduplication'>): BackupJob {
    prepare(this.db, 
        `INSERT INTO backup_jobs (id, account_id, status, source, destination, compression, encryption, deduplication, created_at)
         VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?)`,
      )
      .run(job.id, job.accountId, job.source, job.destination, job.compression, job.encryption ? 1 : 0, job.deduplication ? 1 : 0, new Date().toISOString());
    return this.getBackup(job.id)!;
  }

  insertRestore(job: Pick<RestoreJob, 'id' | 'accountId' | 'backupId' | 'targetPath' | 'paths' | 'overwrite'>): RestoreJob {
    prepare(this.db, 
        `INSERT INTO restore_jobs (id, account_id, backup_id, status, target_path, paths, overwrite, created_at)
         VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)`,
      )
      .run(job.id, job.accountId, job.backupId, job.targetPath, job.paths ? JSON.stringify(job.paths) : null, job.overwrite, new Date().toISOString());
    return this.getRestore(job.id)!;
  }

  /** With accountId, answers only that account's job (another account's id looks missing). */
  getBackup(id: string, accountId?: string): BackupJob | undefined {
    const row = prepare(this.db, 'SELECT * FROM backup_jobs WHERE id = ?').get(id) as Row | undefined;
    if (!row || (accountId !== undefined && row.account_id !== accountId)) return undefined;
    return toBackup(row);
  }

  getRestore(id: string, accountId?: string): RestoreJob | undefined {
    const row = prepare(this.db, 'SELECT * FROM restore_jobs WHERE id = ?').get(id) as Row | undefined;
    if (!row || (accountId !== undefined && row.account_id !== accountId)) return undefined;
    return toRestore(row);
  }

  /** Newest first; `before` is the last id of the previous page (ids sort by creation time). */
  listBackups(accountId: string, opts: { limit: number; before?: string; status?: JobStatus }): BackupJob[] {
    const rows = prepare(this.db, 
        `SELECT * FROM backup_jobs WHERE account_id = ? AND (? IS NULL OR id < ?) AND (? IS NULL OR status = ?)
         ORDER BY id DESC LIMIT ?`,
      )
      .all(accountId, opts.before ?? null, opts.before ?? null, opts.status ?? null, opts.status ?? null, opts.limit) as Row[];
    return rows.map(toBackup);
  }

  newestCompletedBackup(accountId: string): BackupJob | undefined {
    const row = prepare(this.db, `SELECT * FROM backup_jobs WHERE account_id = ? AND status = 'completed' ORDER BY id DESC LIMIT 1`)
      .get(accountId) as Row | undefined;
    return row && toBackup(row);
  }

  /** queued -> running. False when the job is no longer queued (e.g. cancelled meanwhile). */
  markRunning(kind: JobKind, id: string): boolean {
    const r = prepare(this.db, `UPDATE ${TABLE[kind]} SET status = 'running', started_at = ? WHERE id = ? AND status = 'queued'`)
      .run(new Date().toISOString(), id);
    return Number(r.changes) > 0;
  }

  updateProgress(kind: JobKind, id: string, p: Progress): void {
    prepare(this.db, 
        `UPDATE ${TABLE[kind]} SET files_done = ?, files_total = ?, bytes_done = ?, bytes_total = ? WHERE id = ? AND status = 'running'`,
      )
      .run(p.filesDone, p.filesTotal, p.bytesDone, p.bytesTotal, id);
  }

  completeBackup(id: string, r: { snapshotId: string; filesBackedUp: number; sizeBytes: number; storedBytes: number; progress: Progress; warnings?: JobWarnings }): boolean {
    const res = prepare(this.db, 
        `UPDATE backup_jobs SET status = 'completed', finished_at = ?, snapshot_id = ?, files_backed_up = ?, size_bytes = ?, stored_bytes = ?,
           files_done = ?, files_total = ?, bytes_done = ?, bytes_total = ?, warnings = ?
         WHERE id = ? AND status = 'running'`,
      )
      .run(new Date().toISOString(), r.snapshotId, r.filesBackedUp, r.sizeBytes, r.storedBytes,
        r.progress.filesDone, r.progress.filesTotal, r.progress.bytesDone, r.progress.bytesTotal, JSON.stringify(r.warnings ?? NO_WARNINGS), id);
    return Number(res.changes) > 0;
  }

  completeRestore(id: string, r: { filesRestored: number; filesSkipped: number; sizeBytes: number; progress: Progress; warnings?: JobWarnings }): boolean {
    const res = prepare(this.db, 
        `UPDATE restore_jobs SET status = 'completed', finished_at = ?, files_restored = ?, files_skipped = ?, size_bytes = ?,
           files_done = ?, files_total = ?, bytes_done = ?, bytes_total = ?, warnings = ?
         WHERE id = ? AND status = 'running'`,
      )
      .run(new Date().toISOString(), r.filesRestored, r.filesSkipped, r.sizeBytes,
        r.progress.filesDone, r.progress.filesTotal, r.progress.bytesDone, r.progress.bytesTotal, JSON.stringify(r.warnings ?? NO_WARNINGS), id);
    return Number(res.changes) > 0;
  }

  /** Moves a queued or running job to failed or cancelled; false when it had already finished. */
  finish(kind: JobKind, id: string, status: 'failed' | 'cancelled', error: JobError | null): boolean {
    const res = prepare(this.db, 
        `UPDATE ${TABLE[kind]} SET status = ?, finished_at = ?, error_code = ?, error_message = ?
         WHERE id = ? AND status IN ('queued', 'running')`,
      )
      .run(status, new Date().toISOString(), error?.code ?? null, error?.message ?? null, id);
    return Number(res.changes) > 0;
  }

  /**
   * Start-up recovery: every job left running by a previous process becomes failed/INTERRUPTED.
   * Returns the ids of jobs still queued, oldest first, for the caller to re-queue.
   */
  recover(): { interrupted: string[]; queued: Array<{ kind: JobKind; id: string }> } {
    return transaction(this.db, () => {
      const interrupted: string[] = [];
      const queued: Array<{ kind: JobKind; id: string }> = [];
      for (const kind of ['backup', 'restore'] as const) {
        const running = prepare(this.db, `SELECT id FROM ${TABLE[kind]} WHERE status = 'running'`).all() as Array<{ id: string }>;
        for (const { id } of running) {
          this.finish(kind, id, 'failed', { code: 'INTERRUPTED', message: 'The server stopped while the job was running.' });
          interrupted.push(id);
        }
        const waiting = prepare(this.db, `SELECT id FROM ${TABLE[kind]} WHERE status = 'queued' ORDER BY id`).all() as Array<{ id: string }>;
        for (const { id } of waiting) queued.push({ kind, id });
      }
      queued.sort((a, b) => (a.id.slice(4) < b.id.slice(4) ? -1 : 1));
      return { interrupted, queued };
    });
  }

  counts(): { queued: number; running: number } {
    const rows = prepare(this.db, 
        `SELECT status, COUNT(*) AS n FROM (
           SELECT status FROM backup_jobs WHERE status IN ('queued', 'running')
           UNION ALL SELECT status FROM restore_jobs WHERE status IN ('queued', 'running'))
         GROUP BY status`,
      )
      .all() as Array<{ status: string; n: number }>;
    const out = { queued: 0, running: 0 };
    for (const r of rows) if (r.status === 'queued' || r.status === 'running') out[r.status] = r.n;
    return out;
  }
}

import { FINAL_STATUSES, MAX_WARNING_ITEMS, type BackupResult, type MaintenanceResult, type RestoreResult } from '../records.ts';
import type { StatusChange } from '../store.ts';
import type { Dialect } from './executor.ts';

/** The result columns of each kind's table. */
const RESULT_COLUMNS = {
  backup: { table: 'backups', columns: { snapshotId: 'snapshot_id', filesBackedUp: 'files_backed_up', sizeBytes: 'size_bytes', storedBytes: 'stored_bytes' } },
  restore: { table: 'restores', columns: { filesRestored: 'files_restored', filesSkipped: 'files_skipped', sizeBytes: 'size_bytes' } },
  maintenance: { table: 'maintenance', columns: { outcome: 'result' } },
} as const;

interface Statement {
  sql: string;
  params: unknown[];
}

/** The compare-and-set UPDATE of `jobs` for a status change: it changes one row or none. */
export function statusUpdate(change: StatusChange, d: Dialect): Statement {
  const set: string[] = ['status = ?'];
  const params: unknown[] = [change.to];
  const where: string[] = [`id = ?`, `status IN (${change.from.map(() => '?').join(', ')})`];
  const whereParams: unknown[] = [change.id, ...change.from];
  if (change.to === 'running') {
    if (!change.claim) throw new Error('a job starts only through a claim');
    set.push(`started_at = ${d.now}`, 'owner = ?', `lease_expires_at = ${d.nowMs} + ?`, 'cancel_requested = 0');
    params.push(change.claim.owner, change.claim.leaseMs);
    where.push(
      `NOT EXISTS (SELECT 1 FROM jobs r WHERE r.status = 'running' AND r.repository = jobs.repository)`,
      `(SELECT COUNT(*) FROM jobs r WHERE r.status = 'running' AND r.account_id = jobs.account_id) < ?`,
    );
    whereParams.push(change.claim.accountCap);
  }
  if (FINAL_STATUSES.includes(change.to)) set.push(`finished_at = ${d.now}`, 'owner = NULL', 'lease_expires_at = NULL');
  if (change.error !== undefined) {
    set.push('error_code = ?', 'error_message = ?');
    params.push(change.error?.code ?? null, change.error?.message ?? null);
  }
  if (change.progress) {
    set.push('files_done = ?', 'files_total = ?', 'bytes_done = ?', 'bytes_total = ?');
    const p = change.progress;
    params.push(p.filesDone, p.filesTotal, p.bytesDone, p.bytesTotal);
  }
  if (change.warnings) {
    set.push('warnings_count = ?', 'warnings = ?');
    params.push(change.warnings.count, JSON.stringify(change.warnings.items.slice(0, MAX_WARNING_ITEMS)));
  }
  if (change.owner !== undefined) {
    where.push('owner = ?');
    whereParams.push(change.owner);
  }
  if (change.leaseExpired) where.push(`lease_expires_at < ${d.nowMs}`);
  return { sql: `UPDATE jobs SET ${set.join(', ')} WHERE ${where.join(' AND ')}`, params: [...params, ...whereParams] };
}

/** The UPDATE of the kind's own table with the job's result, when the change carries one. */
export function resultUpdate(change: StatusChange): Statement | null {
  if (!change.result) return null;
  const { table, columns } = RESULT_COLUMNS[change.kind];
  const set: string[] = [];
  const params: unknown[] = [];
  for (const [field, column] of Object.entries(columns)) {
    const value = (change.result as Partial<BackupResult & RestoreResult & MaintenanceResult>)[field as keyof (BackupResult & RestoreResult & MaintenanceResult)];
    if (value === undefined) continue;
    set.push(`${column} = ?`);
    params.push(value !== null && typeof value === 'object' ? JSON.stringify(value) : value);
  }
  return set.length ? { sql: `UPDATE ${table} SET ${set.join(', ')} WHERE id = ?`, params: [...params, change.id] } : null;
}

/** A backup that ends other than completed keeps no listing. */
export function listingDrop(change: StatusChange): Statement | null {
  if (change.kind !== 'backup' || change.to === 'completed' || !FINAL_STATUSES.includes(change.to)) return null;
  return { sql: 'DELETE FROM backup_entries WHERE backup_id = ?', params: [change.id] };
}

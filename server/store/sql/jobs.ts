import { FINAL_STATUSES, type BackupJob, type Job, type JobKind, type JobStatus, type MaintenanceJob, type NewBackup, type NewMaintenance, type NewRestore, type Progress, type RestoreJob } from '../records.ts';
import type { JobStore, JobSummary, QueueCandidate, StatusChange } from '../store.ts';
import type { Row, Sql } from './executor.ts';
import { SELECT, toBackup, toMaintenance, toRestore } from './job-rows.ts';
import { listingDrop, resultUpdate, statusUpdate } from './status-change.ts';
import { VersionedCache } from '../versioned-cache.ts';

/** Transactions that change which jobs run take this lock, so claims on every instance see each other. */
const CLAIM_LOCK = 'jobs:claim';

/** The statements read on every request, made once (the statement cache is keyed by their text). */
const BY_ID = { backup: `${SELECT.backup} WHERE j.id = ?`, restore: `${SELECT.restore} WHERE j.id = ?`, maintenance: `${SELECT.maintenance} WHERE j.id = ?` };

const placeholders = (n: number): string => Array.from({ length: n }, () => '?').join(', ');

/**
 * How long after a change to a finished job is committed by another writer (another instance, an
 * operator's SQL) this store has stopped answering what it cached before it.
 */
export const JOB_CHANGES_SEEN_WITHIN_MS = 1000;

export class SqlJobStore implements JobStore {
  private readonly sql: Sql;
  private readonly sharedByInstances: boolean;
  /**
   * Finished jobs by id. A finished job changes only when a backup is deleted: by this store (which
   * drops the cache at once) or by another writer (seen through job_epoch, see VersionedCache).
   */
  private readonly finished: VersionedCache<Job>;

  constructor(sql: Sql, options: { sharedByInstances?: boolean } = {}) {
    this.sql = sql;
    this.sharedByInstances = options.sharedByInstances ?? false;
    this.finished = new VersionedCache<Job>({
      readVersion: async () => Number((await this.sql.get<{ version: number | string }>('SELECT version FROM job_epoch WHERE id = 1'))!.version),
      seenWithinMs: JOB_CHANGES_SEEN_WITHIN_MS,
      size: 10_000,
      keep: (job) => FINAL_STATUSES.includes(job.status),
    });
  }

  /** A job by id through the cache of finished jobs; in a transaction, from the database. */
  private async byId<J extends Job>(kind: J['kind'], id: string, accountId: string | undefined, sql: Sql, read: (row: Row) => J): Promise<J | undefined> {
    const cached = sql === this.sql ? this.finished.peek(id) : undefined;
    let job: Job | undefined = cached;
    if (!cached) {
      const ticket = sql === this.sql ? this.finished.ticket() : null;
      const row = await sql.get(BY_ID[kind], [id]);
      job = row && read(row);
      if (sql === this.sql) this.finished.keep(id, job, ticket);
    }
    return !job || job.kind !== kind || (accountId !== undefined && job.accountId !== accountId) ? undefined : (job as J);
  }

  insertBackup(job: NewBackup, queueLimit: number): Promise<BackupJob | null> {
    return this.insert(job, 'backup', queueLimit, async (tx) => {
      await tx.run('INSERT INTO backups (id, source, destination, compression, encryption, deduplication) VALUES (?, ?, ?, ?, ?, ?)', [
        job.id,
        job.source,
        job.destination,
        job.compression,
        job.encryption ? 1 : 0,
        job.deduplication ? 1 : 0,
      ]);
      return this.getBackup(job.id, undefined, tx);
    });
  }

  insertRestore(job: NewRestore, queueLimit: number): Promise<RestoreJob | null> {
    return this.insert(job, 'restore', queueLimit, async (tx) => {
      await tx.run('INSERT INTO restores (id, backup_id, target_path, paths, overwrite) VALUES (?, ?, ?, ?, ?)', [
        job.id,
        job.backupId,
        job.targetPath,
        job.paths ? JSON.stringify(job.paths) : null,
        job.overwrite,
      ]);
      return this.getRestore(job.id, undefined, tx);
    });
  }

  async insertMaintenance(job: NewMaintenance, queueLimit: number): Promise<{ job: MaintenanceJob; inserted: boolean } | null> {
    // Under the repository's own lock as well: two requests never both insert.
    return this.sql.transaction(
      async (tx) => {
        const active = await tx.get(`${SELECT.maintenance} WHERE j.repository = ? AND j.status IN ('queued', 'running') ORDER BY j.id LIMIT 1`, [job.repository]);
        if (active) return { job: toMaintenance(active), inserted: false };
        const created = await this.insert(job, 'maintenance', queueLimit, async (t) => {
          await t.run('INSERT INTO maintenance (id, operation, destination, trigger, dry_run, read_data, read_data_subset) VALUES (?, ?, ?, ?, ?, ?, ?)', [
            job.id,
            job.operation,
            job.destination,
            job.trigger,
            job.dryRun ? 1 : 0,
            job.readData ? 1 : 0,
            job.readDataSubset,
          ]);
          return this.getMaintenance(job.id, undefined, t);
        }, tx);
        return created && { job: created, inserted: true };
      },
      { locks: [`jobs:repository:${job.repository}`, `jobs:account:${job.accountId}`] },
    );
  }

  /** A new job starts queued (its only first state); the queue limit is checked under the account's lock. */
  private insert<J>(
    job: { id: string; accountId: string; repository: string },
    kind: JobKind,
    queueLimit: number,
    details: (tx: Sql) => Promise<J | undefined>,
    outer?: Sql,
  ): Promise<J | null> {
    return (outer ?? this.sql).transaction(
      async (tx) => {
        const queued = await tx.get<{ n: number }>(`SELECT COUNT(*) AS n FROM jobs WHERE account_id = ? AND status = 'queued'`, [job.accountId]);
        if (Number(queued!.n) >= queueLimit) return null;
        await tx.run(`INSERT INTO jobs (id, kind, account_id, repository, status, created_at) VALUES (?, ?, ?, ?, 'queued', ${tx.dialect.now})`, [
          job.id,
          kind,
          job.accountId,
          job.repository,
        ]);
        return (await details(tx))!;
      },
      { locks: [`jobs:account:${job.accountId}`] },
    );
  }

  async get(id: string, accountId?: string): Promise<Job | undefined> {
    const row = await this.sql.get<{ kind: JobKind }>('SELECT kind FROM jobs WHERE id = ?', [id]);
    if (!row) return undefined;
    if (row.kind === 'maintenance') return this.getMaintenance(id, accountId);
    return row.kind === 'backup' ? this.getBackup(id, accountId) : this.getRestore(id, accountId);
  }

  getMaintenance(id: string, accountId?: string, sql = this.sql): Promise<MaintenanceJob | undefined> {
    return this.byId('maintenance', id, accountId, sql, toMaintenance);
  }

  async lastPruneDryRun(accountId: string, destination: string): Promise<MaintenanceJob | undefined> {
    const row = await this.sql.get(
      `${SELECT.maintenance} WHERE j.account_id = ? AND d.destination = ? AND d.operation = 'prune' AND d.dry_run = 1 AND j.status = 'completed' ORDER BY j.finished_at DESC, j.id DESC LIMIT 1`,
      [accountId, destination],
    );
    return row && toMaintenance(row);
  }

  async maintenanceDue(operation: 'prune' | 'check', since: string): Promise<Array<{ accountId: string; destination: string }>> {
    const rows = await this.sql.all<{ account_id: string; destination: string }>(
      `SELECT DISTINCT j.account_id, d.destination FROM jobs j JOIN backups d ON d.id = j.id AND d.deleted_at IS NULL
       WHERE j.kind = 'backup' AND j.status = 'completed' AND NOT EXISTS (
         SELECT 1 FROM jobs m JOIN maintenance md ON md.id = m.id
         WHERE m.account_id = j.account_id AND md.destination = d.destination AND md.operation = ? AND md.dry_run = 0 AND m.created_at > ?)
       ORDER BY j.account_id, d.destination`,
      [operation, since],
    );
    return rows.map((r) => ({ accountId: r.account_id, destination: r.destination }));
  }

  async updatePhase(id: string, owner: string, phase: string): Promise<void> {
    await this.sql.run(`UPDATE maintenance SET phase = ? WHERE id = ? AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = maintenance.id AND j.status = 'running' AND j.owner = ?)`, [phase, id, owner]);
  }

  async completedBackups(accountId: string, filter: { source?: string; destination?: string }): Promise<BackupJob[]> {
    const where = ['j.account_id = ?', `j.kind = 'backup'`, `j.status = 'completed'`];
    const params: unknown[] = [accountId];
    if (filter.source !== undefined) {
      where.push('d.source = ?');
      params.push(filter.source);
    }
    if (filter.destination !== undefined) {
      where.push('d.destination = ?');
      params.push(filter.destination);
    }
    return (await this.sql.all(`${SELECT.backup} WHERE ${where.join(' AND ')} ORDER BY j.id DESC`, params)).map(toBackup);
  }

  async deleteBackup(id: string, accountId: string): Promise<BackupJob | JobStatus | undefined> {
    const outcome = await this.sql.transaction(async (tx) => {
      const job = await this.getBackup(id, accountId, tx);
      if (!job) return undefined;
      if (!FINAL_STATUSES.includes(job.status)) return job.status;
      await tx.run(`UPDATE backups SET deleted_at = ${tx.dialect.now} WHERE id = ?`, [id]);
      await tx.run('DELETE FROM backup_entries WHERE backup_id = ?', [id]);
      return job;
    });
    if (outcome && typeof outcome === 'object') this.finished.drop();
    return outcome;
  }

  async deletionsSeen(): Promise<void> {
    if (this.sharedByInstances) await new Promise((resolve) => setTimeout(resolve, JOB_CHANGES_SEEN_WITHIN_MS + 100));
  }

  getBackup(id: string, accountId?: string, sql = this.sql): Promise<BackupJob | undefined> {
    return this.byId('backup', id, accountId, sql, toBackup);
  }

  getRestore(id: string, accountId?: string, sql = this.sql): Promise<RestoreJob | undefined> {
    return this.byId('restore', id, accountId, sql, toRestore);
  }

  async listBackups(accountId: string, opts: { limit: number; before?: string; status?: JobStatus }): Promise<BackupJob[]> {
    const where = ['j.account_id = ?', `j.kind = 'backup'`];
    const params: unknown[] = [accountId];
    if (opts.before !== undefined) {
      where.push('j.id < ?');
      params.push(opts.before);
    }
    if (opts.status !== undefined) {
      where.push('j.status = ?');
      params.push(opts.status);
    }
    const rows = await this.sql.all(`${SELECT.backup} WHERE ${where.join(' AND ')} ORDER BY j.id DESC LIMIT ?`, [...params, opts.limit]);
    return rows.map(toBackup);
  }

  async newestCompletedBackup(accountId: string): Promise<BackupJob | undefined> {
    const row = await this.sql.get(`${SELECT.backup} WHERE j.account_id = ? AND j.kind = 'backup' AND j.status = 'completed' ORDER BY j.id DESC LIMIT 1`, [accountId]);
    return row && toBackup(row);
  }

  async updateProgress(id: string, owner: string, p: Progress): Promise<void> {
    await this.sql.run(
      `UPDATE jobs SET files_done = ?, files_total = ?, bytes_done = ?, bytes_total = ? WHERE id = ? AND status = 'running' AND owner = ?`,
      [p.filesDone, p.filesTotal, p.bytesDone, p.bytesTotal, id, owner],
    );
  }

  async counts(): Promise<{ queued: number; running: number }> {
    const rows = await this.sql.all<{ status: string; n: number }>(
      `SELECT status, COUNT(*) AS n FROM jobs WHERE status IN ('queued', 'running') GROUP BY status`,
    );
    const out = { queued: 0, running: 0 };
    for (const r of rows) if (r.status === 'queued' || r.status === 'running') out[r.status] = Number(r.n);
    return out;
  }

  async summary(): Promise<JobSummary> {
    const oldest = await this.sql.get<{ at: string | null }>(`SELECT MIN(created_at) AS at FROM jobs WHERE status = 'queued'`);
    const rows = await this.sql.all<{ destination: string; last: string; stored: number | string | null }>(
      `SELECT b.destination, MAX(j.finished_at) AS last, SUM(b.stored_bytes) AS stored
       FROM jobs j JOIN backups b ON b.id = j.id
       WHERE j.kind = 'backup' AND j.status = 'completed' GROUP BY b.destination ORDER BY b.destination`,
    );
    return {
      ...(await this.counts()),
      oldestQueuedAt: oldest?.at ?? null,
      destinations: rows.map((r) => ({ destination: r.destination, lastCompletedAt: r.last, storedBytes: Number(r.stored ?? 0) })),
    };
  }

  async candidates(): Promise<QueueCandidate[]> {
    const rows = await this.sql.all(
      `WITH heads AS (
         SELECT id, ROW_NUMBER() OVER (PARTITION BY repository ORDER BY created_at, substr(id, 5)) AS n FROM jobs WHERE status = 'queued')
       SELECT j.id, j.kind, j.account_id, j.repository, j.created_at,
         (SELECT COUNT(*) FROM jobs r WHERE r.account_id = j.account_id AND r.status = 'running') AS account_running,
         (SELECT MAX(s.started_at) FROM jobs s WHERE s.account_id = j.account_id) AS account_last_started
       FROM heads JOIN jobs j ON j.id = heads.id
       WHERE heads.n = 1 AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.status = 'running' AND r.repository = j.repository)`,
    );
    return rows.map((r: Row) => ({
      id: r.id as string,
      kind: r.kind as JobKind,
      accountId: r.account_id as string,
      repository: r.repository as string,
      queuedAt: r.created_at as string,
      accountRunning: Number(r.account_running),
      accountLastStartedAt: (r.account_last_started as string | null) ?? null,
    }));
  }

  transition(change: StatusChange): Promise<boolean> {
    return this.sql.transaction(
      async (tx) => {
        const update = statusUpdate(change, tx.dialect);
        if ((await tx.run(update.sql, update.params)) === 0) return false;
        for (const statement of [resultUpdate(change), listingDrop(change)]) {
          if (statement) await tx.run(statement.sql, statement.params);
        }
        return true;
      },
      { locks: change.to === 'running' ? [CLAIM_LOCK] : [] },
    );
  }

  async renewLeases(owner: string, ids: readonly string[], leaseMs: number): Promise<{ held: string[]; cancelRequested: string[] }> {
    if (ids.length === 0) return { held: [], cancelRequested: [] };
    const rows = await this.sql.all<{ id: string; cancel_requested: number }>(
      `UPDATE jobs SET lease_expires_at = ${this.sql.dialect.nowMs} + ?
       WHERE owner = ? AND status = 'running' AND id IN (${placeholders(ids.length)}) RETURNING id, cancel_requested`,
      [leaseMs, owner, ...ids],
    );
    return { held: rows.map((r) => r.id), cancelRequested: rows.filter((r) => Number(r.cancel_requested) === 1).map((r) => r.id) };
  }

  async requestCancel(id: string): Promise<boolean> {
    return (await this.sql.run(`UPDATE jobs SET cancel_requested = 1 WHERE id = ? AND status = 'running'`, [id])) > 0;
  }

  expired(): Promise<Array<{ kind: JobKind; id: string }>> {
    return this.sql.all(`SELECT kind, id FROM jobs WHERE status = 'running' AND lease_expires_at < ${this.sql.dialect.nowMs} ORDER BY id`);
  }

  running(): Promise<Array<{ kind: JobKind; id: string }>> {
    return this.sql.all(`SELECT kind, id FROM jobs WHERE status = 'running' ORDER BY id`);
  }
}

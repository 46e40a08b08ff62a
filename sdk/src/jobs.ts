/**
 * Following a job to its end: the polling pattern every backup or restore screen needs. Runs
 * unchanged in browsers and Node; errors arrive as ApiClientError with the envelope's code.
 */
import type { components } from '../../generated/backup-types.ts';
import type { BackupClient } from './backup.ts';

export type BackupJob = components['schemas']['BackupJob'];
export type RestoreJob = components['schemas']['RestoreJob'];
export type CreateBackupRequest = components['schemas']['CreateBackupRequest'];
export type CreateRestoreRequest = components['schemas']['CreateRestoreRequest'];
export type JobStatus = BackupJob['status'];

/** The statuses a job never leaves. */
export const FINISHED_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'cancelled'];

export function isFinished(job: { status: JobStatus }): boolean {
  return FINISHED_STATUSES.includes(job.status);
}

export interface FollowOptions<Job> {
  /** Pause between two reads of the job, in ms (default 2000). */
  intervalMs?: number;
  /** Give up following after this many reads (default 150); the job keeps running on the server. */
  maxPolls?: number;
  /** Called with the job after every read (and with the created job first). */
  onUpdate?: (job: Job) => void;
  signal?: AbortSignal;
}

async function follow<Job extends { id: string; status: JobStatus }>(
  first: Job,
  read: Reader<Job>,
  options: FollowOptions<Job>,
): Promise<Job> {
  const { intervalMs = 2000, maxPolls = 150, onUpdate, signal } = options;
  let job = first;
  onUpdate?.(job);
  for (let polls = 0; !isFinished(job) && polls < maxPolls; polls += 1) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    signal?.throwIfAborted();
    job = await read(job.id, signal);
    onUpdate?.(job);
  }
  return job;
}

type Reader<Job> = (id: string, signal?: AbortSignal) => Promise<Job>;
const readBackup = (client: BackupClient): Reader<BackupJob> => async (id, signal) =>
  (await client.GET('/backup/{id}', { params: { path: { id } }, signal })).data!.data;
const readRestore = (client: BackupClient): Reader<RestoreJob> => async (id, signal) =>
  (await client.GET('/restore/{id}', { params: { path: { id } }, signal })).data!.data;

/**
 * Starts a backup and follows it until it ends (or `maxPolls` reads). The server holds the first
 * answer a few seconds (`Prefer: wait=5`), so short backups come back already finished.
 */
export async function startBackup(client: BackupClient, request: CreateBackupRequest, options: FollowOptions<BackupJob> = {}): Promise<BackupJob> {
  const created = await client.POST('/backup', { body: request, params: { header: { Prefer: 'wait=5' } }, signal: options.signal });
  return follow(created.data!.data, readBackup(client), options);
}

/** Starts a restore and follows it until it ends, as startBackup does. */
export async function startRestore(client: BackupClient, request: CreateRestoreRequest, options: FollowOptions<RestoreJob> = {}): Promise<RestoreJob> {
  const created = await client.POST('/restore', { body: request, params: { header: { Prefer: 'wait=5' } }, signal: options.signal });
  return follow(created.data!.data, readRestore(client), options);
}

/** Follows a backup you already have (e.g. from the list) until it ends. */
export function followBackup(client: BackupClient, job: BackupJob, options: FollowOptions<BackupJob> = {}): Promise<BackupJob> {
  return follow(job, readBackup(client), options);
}

/** Follows a restore you already have until it ends. */
export function followRestore(client: BackupClient, job: RestoreJob, options: FollowOptions<RestoreJob> = {}): Promise<RestoreJob> {
  return follow(job, readRestore(client), options);
}

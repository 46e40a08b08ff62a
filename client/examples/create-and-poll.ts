/**
 * Frontend example: start a backup and follow it until it ends. Runs unchanged in a browser
 * (docs/site/example/) and in Node; errors arrive as ApiClientError with the envelope's code.
 */
import type { BackupClient } from '../backup.ts';
import type { components } from '../../generated/backup-types.ts';

export type BackupJob = components['schemas']['BackupJob'];
export type CreateBackupRequest = components['schemas']['CreateBackupRequest'];

const FINISHED: ReadonlySet<BackupJob['status']> = new Set(['completed', 'failed', 'cancelled']);

export interface PollOptions {
  /** Pause between two reads of the job, in ms (default 2000). */
  intervalMs?: number;
  /** Give up following after this many reads (default 150); the job keeps running on the server. */
  maxPolls?: number;
  /** Called with the job after creation and after every read. */
  onUpdate?: (job: BackupJob) => void;
  signal?: AbortSignal;
}

export async function createAndPoll(
  client: BackupClient,
  request: CreateBackupRequest,
  options: PollOptions = {},
): Promise<BackupJob> {
  const { intervalMs = 2000, maxPolls = 150, onUpdate, signal } = options;
  // Let the server hold the answer a few seconds: short backups come back already finished.
  const created = await client.POST('/backup', { body: request, params: { header: { Prefer: 'wait=5' } }, signal });
  let job = created.data!.data;
  onUpdate?.(job);
  for (let polls = 0; !FINISHED.has(job.status) && polls < maxPolls; polls += 1) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    signal?.throwIfAborted();
    const read = await client.GET('/backup/{id}', { params: { path: { id: job.id } }, signal });
    job = read.data!.data;
    onUpdate?.(job);
  }
  return job;
}

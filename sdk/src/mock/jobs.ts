/**
 * Mock backup and restore jobs: each advances queued → running → completed on a timeline of a
 * few seconds (its speed set by the mock's `jobSeconds`), with progress growing on the way, and
 * can be cancelled. A job is shown by laying its state over the spec's example of that kind, so
 * fields the spec adds later are present too.
 */
import { merge } from './answers.ts';

export type JobKind = 'backup' | 'restore';
export type Status = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

/** One entry of a backup's file listing (the spec's FileEntry). */
export interface FileEntry {
  path: string;
  type: string;
  size_bytes: number;
  [field: string]: unknown;
}

export interface MockJob {
  kind: JobKind;
  id: string;
  account: string;
  /** The request body with the schema's defaults filled in. */
  request: Record<string, unknown>;
  /** What the job covers: a backup's listing, or the entries a restore brings back. */
  entries: FileEntry[];
  createdAt: number;
  startAt: number;
  endAt: number;
  cancelledAt: number | null;
}

/** Regular files and symlinks count as files, directories do not (as the server counts them). */
const countsAsFile = (e: FileEntry): boolean => e.type !== 'directory';

export function totals(entries: FileEntry[]): { files: number; bytes: number } {
  const files = entries.filter(countsAsFile);
  return { files: files.length, bytes: files.reduce((n, e) => n + (e.type === 'file' ? e.size_bytes : 0), 0) };
}

/** A new job's timeline: queued for a fifth of its time (at most a second), then running. */
export function timeline(now: number, jobSeconds: number): Pick<MockJob, 'createdAt' | 'startAt' | 'endAt' | 'cancelledAt'> {
  const total = Math.max(0, jobSeconds * 1000);
  const queued = Math.min(1000, total / 5);
  return { createdAt: now, startAt: now + queued, endAt: now + total, cancelledAt: null };
}

export function statusAt(job: MockJob, now: number): Status {
  if (job.cancelledAt !== null && job.cancelledAt <= now) return 'cancelled';
  if (now >= job.endAt) return 'completed';
  return now >= job.startAt ? 'running' : 'queued';
}

export const isFinal = (status: Status): boolean => status === 'completed' || status === 'failed' || status === 'cancelled';

/** When the job ended (or ends), for Prefer: wait. */
export const endOf = (job: MockJob): number => job.cancelledAt ?? job.endAt;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The job as the API shows it at `now`, laid over `template` (the spec's example of a job of its kind). */
export function presentJob(job: MockJob, template: Record<string, unknown>, now = Date.now()): Record<string, unknown> {
  const status = statusAt(job, now);
  const started = status === 'queued' ? null : Math.min(job.startAt, job.cancelledAt ?? job.startAt);
  const finished = isFinal(status) ? endOf(job) : null;
  const at = finished ?? now;
  const span = job.endAt - job.startAt;
  const fraction = started === null ? 0 : span <= 0 ? 1 : Math.min(1, Math.max(0, (at - job.startAt) / span));
  const all = totals(job.entries);
  const done = { files: Math.floor(all.files * fraction), bytes: Math.floor(all.bytes * fraction) };
  const progress = status === 'queued' ? { files_done: 0, files_total: 0, bytes_done: 0, bytes_total: 0 } : {
    files_done: done.files,
    files_total: all.files,
    bytes_done: done.bytes,
    bytes_total: all.bytes,
  };
  const common = {
    id: job.id,
    status,
    duration_seconds: started === null ? 0 : Math.max(0, Math.round((at - started) / 1000)),
    progress,
    created_at: iso(job.createdAt),
    started_at: iso(started),
    finished_at: iso(finished),
    error: null,
  };
  const r = job.request;
  if (job.kind === 'backup') {
    const compressed = (r.options as { compression?: string } | undefined)?.compression !== 'none';
    return merge(template, {
      ...common,
      source: r.source,
      destination: r.destination,
      options: r.options,
      files_backed_up: done.files,
      size_bytes: done.bytes,
      stored_bytes: compressed ? Math.floor(done.bytes * 0.6) : done.bytes,
    });
  }
  return merge(template, {
    ...common,
    backup_id: r.backup_id,
    target_path: r.target_path,
    paths: r.paths ?? null,
    overwrite: r.overwrite,
    files_restored: done.files,
    files_skipped: 0,
    size_bytes: done.bytes,
  });
}

import type { JobKind, Progress, Store } from '../store/index.ts';

/**
 * Persists job progress at most every `intervalMs` (a job reports per file; the database need not
 * see every one). The last value is kept for the final write with the job's result.
 */
export class ProgressWriter {
  private last: Progress = { filesDone: 0, filesTotal: 0, bytesDone: 0, bytesTotal: 0 };
  private writtenAt = 0;
  private readonly store: Store;
  private readonly kind: JobKind;
  private readonly id: string;
  private readonly intervalMs: number;

  constructor(store: Store, kind: JobKind, id: string, intervalMs = 500) {
    this.store = store;
    this.kind = kind;
    this.id = id;
    this.intervalMs = intervalMs;
  }

  readonly report = (p: Progress): void => {
    this.last = { ...p };
    const now = Date.now();
    if (now - this.writtenAt < this.intervalMs) return;
    this.writtenAt = now;
    this.store.jobs.updateProgress(this.kind, this.id, this.last);
  };

  get latest(): Progress {
    return this.last;
  }
}

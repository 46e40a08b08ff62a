import type { Progress } from '../store/index.ts';

/**
 * Persists job progress at most every `intervalMs` (a job reports per file; the database need not
 * see every one). The last value is kept for the final write with the job's result.
 */
export class ProgressWriter {
  private last: Progress = { filesDone: 0, filesTotal: 0, bytesDone: 0, bytesTotal: 0 };
  private writtenAt = 0;
  private readonly write: (p: Progress) => Promise<void>;
  private readonly intervalMs: number;

  constructor(write: (p: Progress) => Promise<void>, intervalMs = 500) {
    this.write = write;
    this.intervalMs = intervalMs;
  }

  readonly report = (p: Progress): void => {
    this.last = { ...p };
    const now = Date.now();
    if (now - this.writtenAt < this.intervalMs) return;
    this.writtenAt = now;
    // Progress is advisory: a write lost to a database blip is overwritten by the next one.
    this.write(this.last).catch(() => {});
  };

  get latest(): Progress {
    return this.last;
  }
}

import type { Progress } from './types.ts';

/**
 * Accumulates progress and calls back at most every 100 ms, plus at the start, when the totals
 * become known, and at the end. Totals stay 0 until known, and never fall below what is done.
 */
export class ProgressReporter {
  private readonly state: Progress = { filesDone: 0, filesTotal: 0, bytesDone: 0, bytesTotal: 0 };
  private readonly callback: ((p: Progress) => void) | undefined;
  private totalsKnown = false;
  private last = 0;

  constructor(callback: ((p: Progress) => void) | undefined) {
    this.callback = callback;
  }

  add(files: number, bytes: number): void {
    this.state.filesDone += files;
    this.state.bytesDone += bytes;
    const now = Date.now();
    if (now - this.last >= 100) this.emit(now);
  }

  setTotals(files: number, bytes: number): void {
    this.totalsKnown = true;
    this.state.filesTotal = files;
    this.state.bytesTotal = bytes;
    this.emit();
  }

  emit(now = Date.now()): void {
    this.last = now;
    if (!this.callback) return;
    const p = { ...this.state };
    if (this.totalsKnown) {
      p.filesTotal = Math.max(p.filesTotal, p.filesDone);
      p.bytesTotal = Math.max(p.bytesTotal, p.bytesDone);
    }
    this.callback(p);
  }

  /** The final report: what was done is the total. */
  finish(): void {
    this.setTotals(this.state.filesDone, this.state.bytesDone);
  }
}

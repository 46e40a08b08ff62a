import type { Progress } from './types.ts';

/** Accumulates progress and calls back at most every 100 ms, plus once at the start and end. */
export class ProgressReporter {
  private readonly state: Progress;
  private readonly callback: ((p: Progress) => void) | undefined;
  private last = 0;

  constructor(callback: ((p: Progress) => void) | undefined, initial: Progress) {
    this.callback = callback;
    this.state = { ...initial };
  }

  add(files: number, bytes: number): void {
    this.state.filesDone += files;
    this.state.bytesDone += bytes;
    const now = Date.now();
    if (now - this.last >= 100) this.emit(now);
  }

  emit(now = Date.now()): void {
    this.last = now;
    this.callback?.({ ...this.state });
  }

  finish(): void {
    this.emit();
  }
}

import { abortable } from './errors.ts';

/** A byte budget shared by concurrent tasks: acquire waits while the budget is spent (one item is always let through). */
export class Budget {
  private held = 0;
  private waiters: (() => void)[] = [];
  private readonly limit: number;
  private readonly signal: AbortSignal | undefined;

  /** Waits end with CANCELLED when `signal` aborts. */
  constructor(limit: number, signal?: AbortSignal) {
    this.limit = limit;
    this.signal = signal;
  }

  private next(): Promise<void> {
    return abortable(new Promise<void>((resolve) => this.waiters.push(resolve)), this.signal);
  }

  async acquire(bytes: number): Promise<void> {
    while (this.held > 0 && this.held + bytes > this.limit) await this.next();
    this.held += bytes;
  }

  /** Acquires only when that fits now (or nothing is held). */
  tryAcquire(bytes: number): boolean {
    if (this.held > 0 && this.held + bytes > this.limit) return false;
    this.held += bytes;
    return true;
  }

  /** Counts bytes without waiting (for work that cannot be refused). */
  take(bytes: number): void {
    this.held += bytes;
  }

  /** Waits until the budget is not exceeded. */
  async wait(): Promise<void> {
    while (this.held > this.limit) await this.next();
  }

  release(bytes: number): void {
    this.held -= bytes;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

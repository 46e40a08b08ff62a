import { abortable } from './errors.ts';

/** What `acquire` and `wait` return when they need not wait: one promise for all (a backup asks per file). */
const NOW: Promise<void> = Promise.resolve();

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

  /** Resolves once `bytes` are held (at once when they fit: no promise of its own then). */
  acquire(bytes: number): Promise<void> {
    if (this.held > 0 && this.held + bytes > this.limit) return this.acquireLater(bytes);
    this.held += bytes;
    return NOW;
  }

  private async acquireLater(bytes: number): Promise<void> {
    while (this.held > 0 && this.held + bytes > this.limit) await this.next();
    this.held += bytes;
  }

  /** Acquires only when that fits now (or nothing is held). */
  tryAcquire(bytes: number): boolean {
    if (this.held > 0 && this.held + bytes > this.limit) return false;
    this.held += bytes;
    return true;
  }

  /** Whether more than the limit is held (`wait` would wait). */
  get exceeded(): boolean {
    return this.held > this.limit;
  }

  /** Counts bytes without waiting (for work that cannot be refused). */
  take(bytes: number): void {
    this.held += bytes;
  }

  /** Waits until the budget is not exceeded. */
  wait(): Promise<void> {
    return this.held > this.limit ? this.waitLater() : NOW;
  }

  private async waitLater(): Promise<void> {
    while (this.held > this.limit) await this.next();
  }

  release(bytes: number): void {
    this.held -= bytes;
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

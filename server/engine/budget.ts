/** A byte budget shared by concurrent tasks: acquire waits while the budget is spent (one item is always let through). */
export class Budget {
  private held = 0;
  private waiters: (() => void)[] = [];
  private readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  async acquire(bytes: number): Promise<void> {
    while (this.held > 0 && this.held + bytes > this.limit) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
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
    while (this.held > this.limit) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  release(bytes: number): void {
    this.held -= bytes;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

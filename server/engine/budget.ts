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

  release(bytes: number): void {
    this.held -= bytes;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

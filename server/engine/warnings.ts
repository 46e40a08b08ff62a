import type { Warning, Warnings } from './types.ts';

export const WARNINGS_LISTED = 100;

/** Collects what a job could not do: counts every warning, keeps the first 100. */
export class WarningList {
  private readonly list: Warnings = { count: 0, items: [] };

  add(path: Uint8Array, reason: string): void {
    this.list.count++;
    if (this.list.items.length < WARNINGS_LISTED) this.list.items.push({ path, reason } satisfies Warning);
  }

  get count(): number {
    return this.list.count;
  }

  result(): Warnings {
    return { count: this.list.count, items: [...this.list.items] };
  }
}

import type { FileRecord, Store } from '../store/index.ts';

/**
 * Entries per append: large enough to amortise a transaction, small enough to bound memory; a
 * power of two, so that the store inserts it in whole statements of its largest size.
 */
const BATCH = 2048;

/** Appends a backup's file listing to the store in batches, as the entries come. */
export class ListingWriter {
  private readonly store: Store;
  private readonly backupId: string;
  private pending: FileRecord[] = [];
  private written = 0;

  constructor(store: Store, backupId: string) {
    this.store = store;
    this.backupId = backupId;
  }

  async add(records: Iterable<FileRecord>): Promise<void> {
    for (const r of records) {
      this.pending.push(r);
      if (this.pending.length >= BATCH) await this.flush();
    }
  }

  /** Writes what is pending and readies the whole listing for paging. */
  async finish(): Promise<number> {
    const written = await this.flush();
    await this.store.files.settle();
    return written;
  }

  async flush(): Promise<number> {
    const batch = this.pending;
    this.pending = [];
    await this.store.files.append(this.backupId, batch);
    this.written += batch.length;
    return this.written;
  }
}

/**
 * What the shared SQL of the Store runs on: SQLite (store/sqlite) or PostgreSQL (store/postgres).
 * Statements are written once, with `?` placeholders, in the SQL both databases speak; the few
 * differences are in the Dialect. Rows come back alike from both: integers as numbers, bytes as
 * Uint8Array, times as ISO-8601 text.
 */
export type Row = Record<string, unknown>;

export interface Dialect {
  /** The current time, as the timestamp columns hold it. */
  readonly now: string;
  /** The current time in epoch milliseconds (lease columns). */
  readonly nowMs: string;
  /**
   * The statement that readies a table for reading after a bulk insert, or null. PostgreSQL:
   * VACUUM ANALYZE, so the first reads of the new rows neither set hint bits (dirtying pages
   * that must be written out again) nor are planned without statistics. Its cost follows the
   * pages not yet vacuumed, not the table.
   */
  settle(table: string): string | null;
}

export interface Sql {
  readonly dialect: Dialect;
  all<R = Row>(sql: string, params?: readonly unknown[]): Promise<R[]>;
  get<R = Row>(sql: string, params?: readonly unknown[]): Promise<R | undefined>;
  /** Runs a statement; resolves the number of rows it changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
  /**
   * Runs `fn` in one transaction (committed when it resolves, rolled back when it throws).
   * `locks` name locks held until the end of the transaction, so that transactions naming the
   * same lock run one after another on every instance (SQLite serialises every write anyway).
   */
  transaction<T>(fn: (tx: Sql) => Promise<T>, options?: { locks?: readonly string[] }): Promise<T>;
}

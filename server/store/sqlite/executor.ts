import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import type { Dialect, Row, Sql } from '../sql/executor.ts';
import { prepare, translate } from './db.ts';

export const SQLITE_DIALECT: Dialect = {
  now: `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
  nowMs: `CAST(unixepoch('subsec') * 1000 AS INTEGER)`,
  settle: () => null,
};

function normalize(row: unknown): Row {
  return { ...(row as Row) };
}

/** Per database file: resolves when the transaction open on it in this process ends; absent when none is. */
const openTransactions = new Map<string, Promise<void>>();

/**
 * The shared SQL on one node:sqlite connection. Its calls are synchronous; a transaction, though,
 * spans awaits, so while one is open on a database file every other statement of this process on
 * that file waits for it to end: on the same connection it would run inside the transaction, on
 * another it would block the thread waiting for the lock the transaction holds.
 */
export class SqliteSql implements Sql {
  readonly dialect = SQLITE_DIALECT;
  private readonly db: DatabaseSync;
  private readonly file: string;
  private readonly inTransaction: boolean;

  constructor(db: DatabaseSync, file: string, inTransaction = false) {
    this.db = db;
    this.file = file;
    this.inTransaction = inTransaction;
  }

  private async exec<T>(fn: () => T): Promise<T> {
    while (!this.inTransaction && openTransactions.has(this.file)) await openTransactions.get(this.file);
    try {
      return fn();
    } catch (err) {
      throw translate(err);
    }
  }

  all<R = Row>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    return this.exec(() => prepare(this.db, sql).all(...(params as SQLInputValue[])).map(normalize) as R[]);
  }

  /**
   * The first row. Always run to completion: a write's RETURNING row comes from the first step,
   * but an autocommit statement commits when it completes, and a failed commit (a full disk) must
   * fail the call, not vanish in a statement reset.
   */
  async get<R = Row>(sql: string, params: readonly unknown[] = []): Promise<R | undefined> {
    return (await this.all<R>(sql, params))[0];
  }

  run(sql: string, params: readonly unknown[] = []): Promise<number> {
    return this.exec(() => Number(prepare(this.db, sql).run(...(params as SQLInputValue[])).changes));
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    if (this.inTransaction) return fn(this);
    while (openTransactions.has(this.file)) await openTransactions.get(this.file);
    let end!: () => void;
    openTransactions.set(this.file, new Promise<void>((resolve) => (end = resolve)));
    try {
      try {
        this.db.exec('BEGIN IMMEDIATE');
      } catch (err) {
        throw translate(err);
      }
      try {
        const result = await fn(new SqliteSql(this.db, this.file, true));
        this.db.exec('COMMIT');
        return result;
      } catch (err) {
        if (this.db.isOpen && this.db.isTransaction) this.db.exec('ROLLBACK');
        throw translate(err);
      }
    } finally {
      openTransactions.delete(this.file);
      end();
    }
  }
}

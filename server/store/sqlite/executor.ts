import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { Dialect, Row, Sql } from '../sql/executor.ts';
import { prepare, translate } from './db.ts';

export const SQLITE_DIALECT: Dialect = {
  now: `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
  nowMs: `CAST(unixepoch('subsec') * 1000 AS INTEGER)`,
  settle: () => null,
};

/**
 * What is known of each prepared statement: whether it writes, and how its rows are read. Rows
 * are read as arrays (cheaper than node:sqlite's row objects) and made plain objects by a
 * function made once per statement, an object literal of its column names.
 */
interface StatementInfo {
  write: boolean;
  build: (values: unknown[]) => Row;
}
const infos = new WeakMap<StatementSync, StatementInfo>();

function infoOf(stmt: StatementSync, sql: string): StatementInfo {
  let info = infos.get(stmt);
  if (!info) {
    stmt.setReturnArrays(true);
    const names = stmt.columns().map((c) => c.name);
    const build = names.includes('__proto__')
      ? (values: unknown[]) => {
          const row: Row = {};
          for (let i = 0; i < names.length; i++) Object.defineProperty(row, names[i]!, { value: values[i], enumerable: true, writable: true, configurable: true });
          return row;
        }
      : (new Function('v', `return {${names.map((n, i) => `${JSON.stringify(n)}: v[${i}]`).join(', ')}};`) as (values: unknown[]) => Row);
    info = { write: WRITE.test(sql), build };
    infos.set(stmt, info);
  }
  return info;
}

function rows(stmt: StatementSync, build: (values: unknown[]) => Row, params: readonly unknown[]): Row[] {
  const arrays = stmt.all(...(params as SQLInputValue[])) as unknown as unknown[][];
  const result: Row[] = new Array(arrays.length);
  for (let r = 0; r < arrays.length; r++) result[r] = build(arrays[r]!);
  return result;
}

/** Per database file: resolves when the transaction open on it in this process ends; absent when none is. */
const openTransactions = new Map<string, Promise<void>>();

/** Statements that change rows (a `get` or `all` of one is an INSERT … RETURNING and the like). */
const WRITE = /^\s*(INSERT|UPDATE|DELETE|REPLACE)\b/i;

interface PendingWrite {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: autocommit writes that arrive in the same turn of the event loop run together at
 * its end in one transaction, so they share one commit (one fsync under synchronous=FULL) instead
 * of each paying its own. Every caller is answered once that commit has returned, never before.
 * A statement that fails alone (a constraint) fails only its caller, SQLite undoing just that
 * statement; a failure that ends the transaction (a full disk, an I/O error) or a failed commit
 * fails every write of the group, none of which was kept.
 */
class GroupCommit {
  private readonly db: DatabaseSync;
  private readonly file: string;
  private pending: PendingWrite[] = [];
  private scheduled = false;

  constructor(db: DatabaseSync, file: string) {
    this.db = db;
    this.file = file;
  }

  write<T>(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    // A transaction spanning awaits holds the connection: the group commits after it.
    while (openTransactions.has(this.file)) await openTransactions.get(this.file);
    this.scheduled = false;
    const group = this.pending;
    this.pending = [];
    if (group.length === 1) {
      const [only] = group as [PendingWrite];
      try {
        only.resolve(only.run());
      } catch (err) {
        only.reject(translate(err));
      }
      return;
    }
    const failAll = (err: unknown) => {
      const translated = translate(err);
      for (const w of group) w.reject(translated);
    };
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      failAll(err);
      return;
    }
    const results: Array<{ ok: true; value: unknown } | { ok: false; err: unknown }> = [];
    for (const w of group) {
      try {
        results.push({ ok: true, value: w.run() });
      } catch (err) {
        if (!this.db.isTransaction) {
          failAll(err);
          return;
        }
        results.push({ ok: false, err });
      }
    }
    try {
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isOpen && this.db.isTransaction) this.db.exec('ROLLBACK');
      failAll(err);
      return;
    }
    for (const [i, w] of group.entries()) {
      const r = results[i]!;
      if (r.ok) w.resolve(r.value);
      else w.reject(translate(r.err));
    }
  }
}

const groups = new WeakMap<DatabaseSync, GroupCommit>();

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

  private async exec<T>(fn: () => T, write = false): Promise<T> {
    if (write && !this.inTransaction) {
      let group = groups.get(this.db);
      if (!group) groups.set(this.db, (group = new GroupCommit(this.db, this.file)));
      return group.write(fn);
    }
    while (!this.inTransaction && openTransactions.has(this.file)) await openTransactions.get(this.file);
    try {
      return fn();
    } catch (err) {
      throw translate(err);
    }
  }

  all<R = Row>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    let stmt: StatementSync;
    let info: StatementInfo;
    try {
      stmt = prepare(this.db, sql);
      info = infoOf(stmt, sql);
    } catch (err) {
      return Promise.reject(translate(err));
    }
    return this.exec(() => rows(stmt, info.build, params) as R[], info.write);
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
    return this.exec(() => Number(prepare(this.db, sql).run(...(params as SQLInputValue[])).changes), true);
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

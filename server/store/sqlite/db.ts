import { chmodSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { StoreError, StoreFullError, StoreUnavailableError } from '../errors.ts';
import { MIGRATIONS } from './migrations.ts';

/**
 * How long a statement waits for another process's lock (the keys command, an operator's sqlite3)
 * before failing with SQLITE_BUSY, answered 503. node:sqlite waits synchronously, blocking the
 * event loop, so this stays short.
 */
const BUSY_TIMEOUT_MS = 1000;

/**
 * Owner-only access to a database file and its companions. By path, never through a file
 * descriptor: closing any descriptor of a file drops every POSIX lock this process holds on it,
 * SQLite's included.
 */
export function restrictMode(file: string): void {
  for (const name of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    try {
      chmodSync(name, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/**
 * Opens (creating if needed, 0600 in a 0700 directory) the service database: WAL journal, foreign
 * keys on, synchronous=FULL so a committed row (a contact message answered 201) survives a power
 * cut, not just a crash. SQLite creates its -wal and -shm files with the database file's mode.
 */
export function openDatabase(file: string, options: { migrate?: boolean } = {}): DatabaseSync {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const db = new DatabaseSync(file, { enableForeignKeyConstraints: true, timeout: BUSY_TIMEOUT_MS });
  if (file !== ':memory:') restrictMode(file);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
  db.exec('PRAGMA foreign_keys = ON');
  if (options.migrate !== false) migrate(db);
  return db;
}

/** Applies pending migrations, each in its own write transaction (re-reading the version inside it, so two processes starting together apply each once). */
function migrate(db: DatabaseSync): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
  for (const [index, sql] of MIGRATIONS.entries()) {
    const version = index + 1;
    transaction(db, () => {
      const row = db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as { v: number };
      if (version <= row.v) return;
      db.exec(sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(version, new Date().toISOString());
    });
  }
}

/** Runs fn inside BEGIN IMMEDIATE … COMMIT, rolling back on any throw. */
export function transaction<T>(db: DatabaseSync, fn: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = fn();
    db.exec('COMMIT');
    return result;
  } catch (err) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

const statements = new WeakMap<DatabaseSync, Map<string, StatementSync>>();

/** A prepared statement for `sql`, prepared once per connection and reused (preparing costs more than running). */
export function prepare(db: DatabaseSync, sql: string): StatementSync {
  let cache = statements.get(db);
  if (!cache) statements.set(db, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) cache.set(sql, (stmt = db.prepare(sql)));
  return stmt;
}

/** SQLite primary result codes (low byte) that mean "cannot serve now": BUSY, LOCKED, IOERR, CANTOPEN, PROTOCOL. */
const UNAVAILABLE = new Set([5, 6, 10, 14, 15]);
const FULL = 13;

/** The driver's error in the Store's terms; anything unrecognised is returned as it is (a bug). */
export function translate(err: unknown): unknown {
  if (err instanceof StoreError) return err;
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown };
  if (e?.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number') {
    const primary = e.errcode & 0xff;
    if (primary === FULL) return new StoreFullError('the database disk is full', { cause: err });
    if (UNAVAILABLE.has(primary)) return new StoreUnavailableError('the database cannot serve now', { cause: err });
  }
  if (e?.code === 'ERR_INVALID_STATE' && /database is not open|finalized/.test(String(e.message))) {
    return new StoreUnavailableError('the database is closed', { cause: err });
  }
  return err;
}

/** Runs a synchronous database call as the async Store API does, with its failure translated. */
export function run<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(translate(err));
  }
}

/** The number of rows a statement changed. */
export function changed(result: { changes: number | bigint }): boolean {
  return Number(result.changes) > 0;
}

import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Dialect, Row, Sql } from '../sql/executor.ts';
import { translate } from './errors.ts';

export const POSTGRES_DIALECT: Dialect = {
  now: 'now()',
  nowMs: '(extract(epoch from clock_timestamp()) * 1000)::bigint',
  settle: (table) => `VACUUM (ANALYZE) ${table}`,
};

const INT8 = 20;
const TIMESTAMPTZ = 1184;

/** Rows as the shared SQL expects them: int8 as numbers (every count and size fits 2^53), times as ISO text. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown {
    if (oid === INT8) return Number;
    if (oid === TIMESTAMPTZ) {
      const parse = pg.types.getTypeParser(TIMESTAMPTZ) as (v: string) => Date;
      return (v: string) => parse(v).toISOString();
    }
    return pg.types.getTypeParser(oid, format) as (value: string) => unknown;
  },
};

/** `?` placeholders of the shared SQL as PostgreSQL's `$n` (no statement of ours has a `?` in a literal). */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/** A named lock as the 64-bit key of a transaction-level advisory lock. */
export function lockKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}

type Queryable = pg.Pool | pg.PoolClient;

export function createPool(url: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, types, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30_000 });
  // An idle client that loses its connection emits here; the pool drops it and makes a new one.
  pool.on('error', () => {});
  return pool;
}

/** The shared SQL on a pool (autocommit statements) or on one client inside a transaction. */
export class PostgresSql implements Sql {
  readonly dialect = POSTGRES_DIALECT;
  private readonly db: Queryable;
  private readonly pool: pg.Pool | null;

  constructor(db: Queryable, pool: pg.Pool | null) {
    this.db = db;
    this.pool = pool;
  }

  private async query(sql: string, params: readonly unknown[]): Promise<pg.QueryResult> {
    try {
      return await this.db.query(numbered(sql), params as unknown[]);
    } catch (err) {
      throw translate(err);
    }
  }

  async all<R = Row>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    return (await this.query(sql, params)).rows as R[];
  }

  async get<R = Row>(sql: string, params: readonly unknown[] = []): Promise<R | undefined> {
    return (await this.query(sql, params)).rows[0] as R | undefined;
  }

  async run(sql: string, params: readonly unknown[] = []): Promise<number> {
    return (await this.query(sql, params)).rowCount ?? 0;
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>, options: { locks?: readonly string[] } = {}): Promise<T> {
    if (!this.pool) return fn(this);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw translate(err);
    }
    const tx = new PostgresSql(client, null);
    let broken = false;
    try {
      await tx.run('BEGIN');
      for (const name of [...(options.locks ?? [])].sort()) await tx.get('SELECT pg_advisory_xact_lock(?::bigint)', [lockKey(name)]);
      const result = await fn(tx);
      await tx.run('COMMIT');
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true; // the connection is gone; the server rolls back on its own
      }
      throw err;
    } finally {
      client.release(broken);
    }
  }
}

import { SqlStore } from '../sql/sql-store.ts';
import { PostgresJobEvents } from './events.ts';
import { createPool, PostgresSql } from './executor.ts';
import { migrate } from './migrations.ts';

/** Connections per instance: requests and job runners share them; transactions are short. */
const POOL_SIZE = 10;

/** The distributed store: PostgreSQL at DATABASE_URL, migrated on open (safe when instances start together). */
export async function openPostgresStore(url: string): Promise<SqlStore> {
  const pool = createPool(url, POOL_SIZE);
  try {
    await migrate(pool);
    const sql = new PostgresSql(pool, pool);
    const events = new PostgresJobEvents(url, sql);
    await events.start();
    return new SqlStore(
      sql,
      events,
      async () => {
        await events.close();
        await pool.end();
      },
      { sharedByInstances: true },
    );
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
}

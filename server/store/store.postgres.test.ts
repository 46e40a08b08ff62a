import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../testing/services/postgres.ts';
import { openPostgresStore } from './postgres/index.ts';
import { storeSuite } from './suite.ts';

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

storeSuite('PostgreSQL', async () => {
  const url = await server.createDatabase();
  return { open: () => openPostgresStore(url), cleanup: async () => {} };
});

describe('PostgreSQL listing', () => {
  it('settles a finished listing with VACUUM ANALYZE, so its first pages are read from vacuumed pages with statistics', async () => {
    const url = await server.createDatabase();
    const store = await openPostgresStore(url);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const stats = async () =>
        (await client.query<{ v: Date | null; a: Date | null }>(`SELECT last_vacuum AS v, last_analyze AS a FROM pg_stat_user_tables WHERE relname = 'backup_entries'`)).rows[0];
      expect(await stats()).toEqual({ v: null, a: null });
      await store.files.settle();
      // Statistics reach other sessions once the vacuuming one reports them.
      let seen = await stats();
      for (let i = 0; i < 50 && (!seen?.v || !seen.a); i++) {
        await new Promise((r) => setTimeout(r, 100));
        seen = await stats();
      }
      expect(seen?.v).toBeInstanceOf(Date);
      expect(seen?.a).toBeInstanceOf(Date);
    } finally {
      await client.end();
      await store.close();
    }
  });
});

import { afterAll, beforeAll } from 'vitest';
import { openPostgresStore } from '../store/postgres/index.ts';
import { startPostgres, type PostgresServer } from '../testing/services/postgres.ts';
import { queueSuite } from './queue-suite.ts';

let pg: PostgresServer;
beforeAll(async () => {
  pg = await startPostgres();
});
afterAll(async () => {
  await pg?.stop();
});

queueSuite('distributed (PostgreSQL, LISTEN/NOTIFY)', async () => {
  const url = await pg.createDatabase();
  return { open: () => openPostgresStore(url), cleanup: async () => {} };
});

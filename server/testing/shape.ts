import { startPostgres, type PostgresServer } from './services/postgres.ts';
import { startRedis, type RedisServer } from './services/redis.ts';

/**
 * The deployment shape the API tests run against: `embedded` (SQLite in DATA_DIR, limits in
 * process; the default) or `distributed` (BACKUP_TEST_SHAPE=distributed: a real PostgreSQL,
 * started once per test file, and a real Redis). The same test files run in both
 * (vitest.config.ts), so both shapes pass the same API tests.
 */
export type Shape = 'embedded' | 'distributed';

export function testShape(): Shape {
  return process.env.BACKUP_TEST_SHAPE === 'distributed' ? 'distributed' : 'embedded';
}

let postgres: Promise<PostgresServer> | null = null;
const redises: RedisServer[] = [];

/**
 * The settings that select the shape: in the distributed one, a fresh database and a fresh Redis
 * for each server, so no test sees another's accounts or counters.
 */
export async function shapeEnv(): Promise<Record<string, string>> {
  if (testShape() === 'embedded') return {};
  postgres ??= startPostgres();
  const redis = await startRedis();
  redises.push(redis);
  return { DATABASE_URL: await (await postgres).createDatabase(), REDIS_URL: redis.url };
}

/** Stops what shapeEnv started (the setup file of the distributed run calls it after each file). */
export async function stopShapeServices(): Promise<void> {
  const started = postgres;
  postgres = null;
  for (const redis of redises.splice(0)) await redis.cleanup();
  if (started) await (await started).stop();
}

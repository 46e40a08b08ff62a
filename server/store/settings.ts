import { ConfigError } from '../config-values.ts';

/** DATABASE_URL: a postgres:// URL selects PostgreSQL (the distributed shape); unset, SQLite in DATA_DIR. */
export function loadDatabaseUrl(env: NodeJS.ProcessEnv): string | null {
  const raw = env.DATABASE_URL?.trim();
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('DATABASE_URL must be a URL like postgres://user:password@host:5432/database');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(`DATABASE_URL must be a postgres:// URL (PostgreSQL is the one database server supported), got ${url.protocol}//…`);
  }
  return raw;
}

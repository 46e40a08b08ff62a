import { openSqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';

export interface StoreLocation {
  dataDir: string;
  /** DATABASE_URL: PostgreSQL when set, else SQLite in DATA_DIR. */
  databaseUrl: string | null;
}

/**
 * Opens the store the configuration names. A server opens it `exclusive`: in the embedded mode that
 * locks DATA_DIR to this process (several instances share a PostgreSQL store by design). The
 * PostgreSQL driver is loaded only when it is used: the embedded default never pays for it.
 */
export async function openStore(location: StoreLocation, options: { exclusive?: boolean } = {}): Promise<Store> {
  if (location.databaseUrl) return (await import('./postgres/index.ts')).openPostgresStore(location.databaseUrl);
  return openSqliteStore(location.dataDir, options);
}

export type * from './records.ts';
export { CONTACT_TYPES, FINAL_STATUSES, MAX_WARNING_ITEMS, NO_WARNINGS, SHARED_SECRETS, normalizeEmail } from './records.ts';
export type * from './store.ts';
export { DataDirLockedError, StoreError, StoreFullError, StoreUnavailableError } from './errors.ts';

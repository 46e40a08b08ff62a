/**
 * The Store's failures in its own terms; each implementation translates its driver's errors into
 * these, so nothing else inspects an SQLite result code or a PostgreSQL SQLSTATE. Anything else a
 * store throws is a bug.
 */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The database cannot serve now (unreachable, busy, shutting down): retry later, nothing was done. */
export class StoreUnavailableError extends StoreError {}

/** The database has no space left for the write: nothing of it was kept. */
export class StoreFullError extends StoreError {}

/** Another server already serves this data directory (embedded mode allows one). */
export class DataDirLockedError extends StoreError {}

import { ConfigError } from './config-values.ts';
import { KeyFileExposedError } from './keys/key-file.ts';
import { SecretMismatchError } from './keys/shared-secrets.ts';
import { DataDirLockedError, StoreUnavailableError } from './store/index.ts';

/**
 * Exit codes (sysexits.h) of a server that refuses to start for a reason the operator must act on;
 * each with its own code, so a supervisor can tell them apart.
 */
export const EXIT = {
  /** Another server holds DATA_DIR (embedded mode allows one). */
  dataDirLocked: 75,
  /** The database cannot be reached. */
  storeUnavailable: 69,
  /** A shared secret differs from the deployment's, or its key file is open to others (like a bad setting). */
  secretMismatch: 78,
  /** A setting checked only when the app opens (an object store without a region), as one found while parsing. */
  badSetting: 78,
} as const;

/** The message and exit code for a start-up failure the operator must act on; null for anything else (a bug). */
export function startRefusal(err: unknown): { message: string; code: number } | null {
  if (err instanceof DataDirLockedError) return { message: `Cannot start: ${err.message}`, code: EXIT.dataDirLocked };
  if (err instanceof ConfigError) return { message: `Configuration error: ${err.message}`, code: EXIT.badSetting };
  if (err instanceof SecretMismatchError || err instanceof KeyFileExposedError) return { message: `Configuration error: ${err.message}`, code: EXIT.secretMismatch };
  if (err instanceof StoreUnavailableError) {
    return { message: `Cannot start: the database cannot be reached (${(err.cause as Error | undefined)?.message ?? err.message}); check DATABASE_URL and that PostgreSQL runs.`, code: EXIT.storeUnavailable };
  }
  return null;
}

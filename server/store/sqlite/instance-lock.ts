import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { DataDirLockedError } from '../errors.ts';
import { restrictMode } from './db.ts';

/**
 * One server per data directory in the embedded mode: a dedicated SQLite connection holds an
 * exclusive transaction on DATA_DIR/server.lock for the life of the process. The lock is the
 * kernel's (POSIX record locks), so it goes when the process does, however it ends; nothing is
 * left behind to clean up. Other tools (the keys command) open the database without it.
 */
export function lockDataDir(dataDir: string): { release(): void } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, 'server.lock');
  const db = new DatabaseSync(file, { timeout: 0 });
  try {
    restrictMode(file);
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if ((err as { errcode?: number }).errcode !== undefined && ((err as { errcode: number }).errcode & 0xff) === 5) {
      throw new DataDirLockedError(`Another server is already running on ${dataDir} (it holds ${file}); stop it first, or give this one another DATA_DIR.`);
    }
    throw err;
  }
  return {
    release() {
      if (db.isOpen) db.close();
    },
  };
}

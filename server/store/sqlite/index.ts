import { join } from 'node:path';
import { SqlStore } from '../sql/sql-store.ts';
import { openDatabase } from './db.ts';
import { LocalJobEvents } from './events.ts';
import { SqliteSql } from './executor.ts';
import { lockDataDir } from './instance-lock.ts';

/**
 * The embedded store: DATA_DIR/service.db. With `exclusive` (the server), the data directory is
 * locked to this process first, so a second server on it fails at once and touches nothing.
 */
export function openSqliteStore(dataDir: string, options: { exclusive?: boolean } = {}): SqlStore {
  const lock = options.exclusive ? lockDataDir(dataDir) : null;
  try {
    const file = join(dataDir, 'service.db');
    const db = openDatabase(file);
    return new SqlStore(new SqliteSql(db, file), new LocalJobEvents(file), async () => {
      if (db.isOpen) db.close();
      lock?.release();
    });
  } catch (err) {
    lock?.release();
    throw err;
  }
}

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../store/sqlite/index.ts';
import { queueSuite } from './queue-suite.ts';

queueSuite('embedded (SQLite, in process)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'queue-sqlite-'));
  return { open: async () => openSqliteStore(dir), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '../store/index.ts';

/** A real store on a fresh SQLite file in a temp dir, and a cleanup function. */
export async function tempStore(): Promise<{ store: Store; dir: string; cleanup: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'store-'));
  const store = await openStore({ dataDir: dir, databaseUrl: null });
  return {
    store,
    dir,
    async cleanup() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

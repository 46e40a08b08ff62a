import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { SyncFs } from './syncfs.ts';
import { tempDir } from './testing/fixtures.ts';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-syncfs-'));
});
afterEach(async () => {
  await cleanup();
});

it('answers each sync in order from one shell, reports the failure of one with its message, and goes on', async () => {
  const syncs = new SyncFs();
  try {
    const ok = [syncs.run([dir]), syncs.run([dir, '/'])];
    const failed = syncs.run([join(dir, 'missing')]);
    const after = syncs.run([dir]);
    await expect(Promise.all(ok)).resolves.toEqual([undefined, undefined]);
    await expect(failed).rejects.toThrow(/missing/);
    await expect(after).resolves.toBeUndefined();
  } finally {
    syncs.close();
  }
});

it('starts a new shell for a sync asked after close', async () => {
  const syncs = new SyncFs();
  await syncs.run([dir]);
  syncs.close();
  await expect(syncs.run([dir])).resolves.toBeUndefined();
  syncs.close();
});

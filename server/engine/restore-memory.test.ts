import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { tempDir } from './testing/fixtures.ts';

/**
 * A restore's main thread keeps nothing of a small file beyond the file's own flight: with the
 * service's 4 MB young generation, what its collections promote into the old generation (where
 * it stays until a full collection, the restore's peak memory) is a few hundred bytes a file at
 * most. With a promise chain and a decoded tree node per file it was about 1.7 KB a file.
 */
let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-restore-memory-'));
});
afterEach(async () => {
  await cleanup();
});

it('promotes less than 600 bytes a small file out of the main thread young generation during a restore', async () => {
  const files = 6000;
  const { stdout } = await promisify(execFile)(process.execPath, ['--max-semi-space-size=4', join(import.meta.dirname, 'testing/promotion-child.ts'), dir, String(files)], {
    maxBuffer: 1 << 20,
  });
  const { promoted, files: restored } = JSON.parse(stdout.trim().split('\n').at(-1)!) as { promoted: number; files: number };
  expect(restored).toBe(files);
  expect(promoted).toBeLessThan(600 * files);
}, 120_000);

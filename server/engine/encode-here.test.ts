import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { backup, check, restore, verify } from './index.ts';
import { newMasterKey } from './crypto.ts';
import { WorkerPool } from './pool.ts';
import { describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { openTestRepo } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
});
afterEach(async () => {
  vi.restoreAllMocks();
  await cleanup();
});

/** Text that compresses, different from file to file. */
function text(seed: number, size: number): Buffer {
  const line = Buffer.from(`export const value${seed} = ${JSON.stringify(randomBytes(24).toString('base64'))};\n`);
  return Buffer.alloc(size, line);
}

it('restores byte for byte whether the pool encodes chunks on its own thread for every chunk it may, or for none, with copies of files among them', async () => {
  const src = join(dir, 'src');
  await mkdir(join(src, 'lib/deep'), { recursive: true });
  for (let i = 0; i < 40; i++) await writeFile(join(src, 'lib', `small${i}.js`), text(i, 100 + i * 997));
  // Large files: one chunk each (below the chunker's minimum), several chunks, and one whose chunks are partly above INLINE_MAX.
  await writeFile(join(src, 'lib/deep/medium.js'), text(100, 300 * 1024));
  await writeFile(join(src, 'lib/deep/bundle.js'), Buffer.concat([text(101, 1500 * 1024), randomBytes(900 * 1024), text(102, 700 * 1024)]));
  await writeRandomFile(join(src, 'random.bin'), 9 * 1024 * 1024 + 5);
  await writeFile(join(src, 'empty'), '');
  // Copies: their chunks come back seen (SeenIds) from whichever thread encoded the first.
  await mkdir(join(src, 'copy'));
  for (const name of ['small3.js', 'small39.js', 'deep/bundle.js']) await copyFile(join(src, 'lib', name), join(src, 'copy', name.replace('/', '-')));
  await copyFile(join(src, 'random.bin'), join(src, 'copy', 'random.bin'));
  const before = await describeTree(src);
  let storedOnce = 0;
  const key = newMasterKey();
  const encodedHere = vi.spyOn(WorkerPool.prototype as unknown as { hold: () => unknown }, 'hold');

  for (const [name, inlineBacklog] of [
    ['always', 0],
    ['never', Number.POSITIVE_INFINITY],
  ] as const) {
    encodedHere.mockClear();
    const { repo } = await openTestRepo(join(dir, name), key);
    try {
      const result = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true, inlineBacklog });
      expect(result.warnings.count).toBe(0);
      if (name === 'always') expect(encodedHere.mock.calls.length).toBeGreaterThan(5);
      else expect(encodedHere).not.toHaveBeenCalled();
      expect((await verify(repo)).errors).toEqual([]);
      expect((await check(repo, { readData: true })).problems).toEqual([]);
      // The same bytes stored whichever thread encoded the copies' first chunks.
      storedOnce ||= result.storedBytes;
      expect(Math.abs(result.storedBytes - storedOnce)).toBeLessThan(64 * 1024);
      const out = join(dir, name, 'out');
      await restore(repo, result.snapshotId, { target: out, overwrite: 'never' });
      expect(await describeTree(out)).toEqual(before);
    } finally {
      await repo.close();
    }
  }
});

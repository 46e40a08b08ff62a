import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { tempDir } from './testing/fixtures.ts';

/**
 * Backup, listing and restore stream: what they hold is bounded by the widest directory and the
 * pipeline's budgets, not by the number of files. Measured in a child process with a heap
 * ceiling: the peak heap above the start is about the same for 5,000 files as for 1,000 (an
 * engine holding every entry would need about a kilobyte more per file).
 */
let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-memory-'));
});
afterEach(async () => {
  await cleanup();
});

async function growth(files: number): Promise<{ growth: number; entries: number; listed: number }> {
  const work = join(dir, String(files));
  const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--max-old-space-size=64', join(import.meta.dirname, 'testing/memory-child.ts'), work, String(files)], {
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { growth: number; entries: number; listed: number };
}

it('holds about the same memory for 5,000 files as for 1,000 (backup, listing, restore)', async () => {
  const small = await growth(1000);
  const large = await growth(5000);
  const dirs = (n: number): number => Math.ceil(n / 1000) + Math.ceil(n / 100);
  expect(small).toMatchObject({ entries: 1000 + dirs(1000), listed: 1000 + dirs(1000) });
  expect(large).toMatchObject({ entries: 5000 + dirs(5000), listed: 5000 + dirs(5000) });
  expect(large.growth - small.growth).toBeLessThan(1.5 * 1024 * 1024);
  expect(large.growth).toBeLessThan(16 * 1024 * 1024);
}, 120_000);

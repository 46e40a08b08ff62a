import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { backup, check, forget, prune, restore } from './index.ts';
import type { BackupResult } from './index.ts';
import { describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import type { TreeDescription } from './testing/fixtures.ts';
import { openTestRepo, t } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;
const MiB = 1024 * 1024;
const opts = { compression: 'zstd', encryption: true, deduplication: true } as const;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-prune-concurrency-'));
});
afterEach(async () => {
  await cleanup();
});

it('five backups of changing data run while a prune runs: all complete, check passes, every snapshot restores byte-identical', async () => {
  const { repo, reopen } = await openTestRepo(dir);
  // x.bin and z.bin are in a forgotten snapshot only: their chunks are the prune's candidates.
  const old = join(dir, 'old');
  await mkdir(old);
  await writeRandomFile(join(old, 'x.bin'), 3 * MiB);
  await writeRandomFile(join(old, 'z.bin'), 2 * MiB);
  await writeRandomFile(join(old, 'y.bin'), 2 * MiB);
  const forgotten = await backup(repo, { source: old, ...opts });
  await forget(repo, forgotten.snapshotId);

  const sources: string[] = [];
  for (let i = 0; i < 5; i++) {
    const src = join(dir, `src${i}`);
    await mkdir(src);
    await copyFile(join(old, i === 0 ? 'z.bin' : 'x.bin'), join(src, i === 0 ? 'z.bin' : 'x.bin'));
    await writeRandomFile(join(src, `own${i}.bin`), MiB + i);
    sources.push(src);
  }

  // Backup 0 starts before the marker and reads z.bin once the marker is written: it reuses
  // candidates, so the prune must wait for it and keep what its snapshot uses. Backups 1-4 start
  // after the marker and read x.bin once the prune has taken its final picture (it is about to
  // write and delete): they must not reuse candidates, or x.bin is lost.
  let markerWritten!: () => void;
  const marked = new Promise<void>((resolve) => (markerWritten = resolve));
  let pictureTaken!: () => void;
  const decided = new Promise<void>((resolve) => (pictureTaken = resolve));
  let started!: () => void;
  const firstStarted = new Promise<void>((resolve) => (started = resolve));
  const early = backup(await reopen(), {
    source: sources[0]!,
    ...opts,
    onProgress: () => started(),
    beforeOpen: async (path) => {
      if (t(path) === 'z.bin') await marked;
    },
  });
  await firstStarted;
  const trees: TreeDescription[] = [await describeTree(sources[0]!)];
  const later = (async () => {
    await marked;
    return Promise.all(
      [1, 2, 3, 4].map(async (i) => {
        await writeRandomFile(join(sources[i]!, 'grown.bin'), i * 256 * 1024);
        trees[i] = await describeTree(sources[i]!);
        return backup(await reopen(), {
          source: sources[i]!,
          ...opts,
          beforeOpen: async (path) => {
            if (t(path) === 'x.bin') await decided;
          },
        });
      }),
    );
  })();
  const pruned = await prune(repo, {
    pollMs: 50,
    afterMarker: () => markerWritten(),
    onProgress: (p) => {
      if (p.phase === 'repacking') pictureTaken();
    },
  });
  const results: BackupResult[] = [await early, ...(await later)];

  expect(pruned.packsDeleted + pruned.packsRepacked).toBeGreaterThan(0); // y.bin went
  const final = await reopen();
  const result = await check(final, { readData: true });
  expect(result.problems).toEqual([]);
  expect(result.ok).toBe(true);
  expect(results.map((r) => r.warnings.count)).toEqual([0, 0, 0, 0, 0]);
  for (const [i, r] of results.entries()) {
    const target = join(dir, 'out', String(i));
    await restore(final, r.snapshotId, { target, overwrite: 'never' });
    expect(await describeTree(target)).toEqual(trees[i]);
  }
  await repo.close();
}, 120_000);

import { copyFile, mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { backup, check, forget, prune, restore, usage } from './index.ts';
import type { Repository } from './index.ts';
import { allFiles, describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { openTestRepo } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;
const MiB = 1024 * 1024;
const opts = { compression: 'zstd', encryption: true, deduplication: true } as const;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-prune-'));
});
afterEach(async () => {
  await cleanup();
});

async function du(root: string): Promise<number> {
  let n = 0;
  for (const f of await allFiles(root)) n += (await stat(f)).size;
  return n;
}

async function restoresIdentical(repo: Repository, snapshotId: string, expected: object, name: string): Promise<void> {
  const target = join(dir, 'out', name);
  await restore(repo, snapshotId, { target, overwrite: 'never' });
  expect(await describeTree(target)).toEqual(expected);
}

it('reclaims a forgotten backup: the dry run predicts the cost, the repository shrinks by its unique bytes, check passes and the rest restores', async () => {
  const { repo, dir: repoDir } = await openTestRepo(dir);
  const a = join(dir, 'a');
  const b = join(dir, 'b');
  await mkdir(a);
  await mkdir(b);
  for (let i = 0; i < 3; i++) await writeRandomFile(join(a, `big${i}.bin`), 10 * MiB + i);
  await writeRandomFile(join(b, 'small.bin'), 3 * MiB);
  const backupA = await backup(repo, { source: a, ...opts });
  const backupB = await backup(repo, { source: b, ...opts });
  const treeB = await describeTree(b);
  await forget(repo, backupA.snapshotId);

  const before = await du(repoDir);
  const dry = await prune(repo, { dryRun: true });
  expect(await du(repoDir)).toBe(before); // a dry run changes nothing
  expect(dry.dryRun).toBe(true);
  expect(dry.packsDeleted).toBeGreaterThan(0);
  const done = await prune(repo);
  const after = await du(repoDir);
  expect(before - after).toBeGreaterThanOrEqual(0.9 * backupA.storedBytes);
  expect(done.bytesDeleted).toBe(before - after + done.bytesWritten);
  expect(Math.abs(dry.bytesDeleted - done.bytesDeleted)).toBeLessThanOrEqual(0.05 * done.bytesDeleted);
  expect(Math.abs(dry.bytesRemaining - after)).toBeLessThanOrEqual(0.05 * after);
  expect(done.bytesRemaining).toBe(after);

  const checked = await check(repo, { readData: true });
  expect(checked.problems).toEqual([]);
  expect(checked.ok).toBe(true);
  expect(checked.unusedBytes).toBe(0);
  expect(checked.unindexedPacks).toBe(0);
  await restoresIdentical(repo, backupB.snapshotId, treeB, 'b');
  // A repository opened before the prune still reads what moved.
  await repo.close();
});

it('rewrites packs that are mostly garbage and keeps the used blobs they held', async () => {
  const { repo, reopen } = await openTestRepo(dir);
  const src = join(dir, 'src');
  await mkdir(src);
  // Four files in one 16 MiB data pack; three go, so the pack is three-quarters garbage.
  for (let i = 0; i < 4; i++) await writeRandomFile(join(src, `f${i}.bin`), 3 * MiB + i);
  const first = await backup(repo, { source: src, ...opts });
  for (let i = 0; i < 3; i++) await rm(join(src, `f${i}.bin`));
  const second = await backup(repo, { source: src, ...opts });
  const tree = await describeTree(src);
  await forget(repo, first.snapshotId);

  const stale = await reopen(); // loads the index before the prune
  const dry = await prune(repo, { dryRun: true });
  expect(dry.packsRepacked).toBeGreaterThanOrEqual(1);
  expect(dry.bytesRewritten).toBeGreaterThan(3 * MiB);
  expect(dry.bytesRewritten).toBeLessThan(4 * MiB);
  const done = await prune(repo);
  expect(done.packsRepacked).toBe(dry.packsRepacked);
  expect(done.bytesRewritten).toBe(dry.bytesRewritten);

  // A reader that loaded the index before the prune follows the moved blobs.
  await restoresIdentical(stale, second.snapshotId, tree, 'stale-reader');
  const fresh = await reopen();
  expect((await check(fresh, { readData: true })).ok).toBe(true);
  await restoresIdentical(fresh, second.snapshotId, tree, 'fresh');
  const u = await usage(fresh);
  expect(u.snapshots).toBe(1);
  expect(u.uniqueBytes).toBe(3 * MiB + 3);
});

it('counts what each backup stores: the sum over backups plus the config is what is on disk (within 1 %)', async () => {
  const { repo, dir: repoDir } = await openTestRepo(dir);
  const src = join(dir, 'src');
  await mkdir(join(src, 'sub'), { recursive: true });
  let sum = 0;
  let logical = 0;
  for (let round = 0; round < 3; round++) {
    await writeRandomFile(join(src, `r${round}.bin`), 2 * MiB + round);
    for (let i = 0; i < 40; i++) await writeRandomFile(join(src, 'sub', `s${round}-${i}.txt`), 1000 + i);
    if (round === 2) await copyFile(join(src, 'r0.bin'), join(src, 'r0-copy.bin'));
    sum += (await backup(repo, { source: src, ...opts })).storedBytes;
    logical += await du(src);
  }
  const config = (await stat(join(repoDir, 'config'))).size;
  const onDisk = await du(repoDir);
  expect(Math.abs(sum + config - onDisk)).toBeLessThanOrEqual(0.01 * onDisk);
  const u = await usage(repo);
  expect(u.storedBytes).toBe(onDisk);
  expect(u.logicalBytes).toBe(logical);
  expect(u.deduplicationRatio).toBeGreaterThan(1.5);
});

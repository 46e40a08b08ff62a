import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { backup, check, forget, prune, restore } from './index.ts';
import type { Repository } from './index.ts';
import { runAndKill } from './testing/child.ts';
import { allFiles, describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { openTestRepo } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;
const MiB = 1024 * 1024;
const opts = { compression: 'zstd', encryption: true, deduplication: true } as const;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-prune-crash-'));
});
afterEach(async () => {
  await cleanup();
});

async function packs(repoDir: string): Promise<string[]> {
  return (await readdir(join(repoDir, 'data'), { recursive: true })).filter((p) => /[0-9a-f]{64}$/.test(p)).sort();
}

async function checkAndRestore(repo: Repository, snapshots: { id: string; tree: object }[], name: string): Promise<void> {
  const result = await check(repo, { readData: true });
  expect(result.problems).toEqual([]);
  for (const s of snapshots) {
    const target = join(dir, 'out', `${name}-${s.id.slice(0, 8)}`);
    await restore(repo, s.id, { target, overwrite: 'never' });
    expect(await describeTree(target)).toEqual(s.tree);
  }
}

it('after a backup killed mid-way, prune removes exactly the packs it left and touches nothing live', async () => {
  const src = join(dir, 'src');
  await mkdir(join(src, 'base'), { recursive: true });
  for (let i = 0; i < 3; i++) await writeRandomFile(join(src, 'base', `keep${i}.bin`), 2 * MiB + i);
  const { repo, dir: repoDir, keyHex, reopen } = await openTestRepo(dir);
  const first = await backup(repo, { source: src, ...opts });
  const tree = await describeTree(src);
  const live = await packs(repoDir);
  await mkdir(join(src, 'bulk'));
  for (let i = 0; i < 20; i++) await writeRandomFile(join(src, 'bulk', `f${i}.bin`), 10 * MiB);
  // At 110 of the 200 MiB: progress is reported every 100 ms, and the report after the
  // snapshot is saved must not be the first one past the mark.
  const run = await runAndKill(repoDir, keyHex, ['backup', src], (msg) => (msg.progress?.bytesDone ?? 0) >= 110 * MiB, `bytes:${110 * MiB}`);
  expect(run.killed).toBe(true);
  expect((await packs(repoDir)).length).toBeGreaterThan(live.length + 1);
  // A save cut short leaves a temp file beside its target.
  await writeFile(join(repoDir, 'data', live[0]!.split('/')[0]!, `.${'0'.repeat(64)}.tmp-abcdef`), 'partial');

  const left = await Promise.all((await packs(repoDir)).map(async (p) => `${p.slice(-64, -56)} ${live.includes(p) ? 'live' : 'left'} ${(await stat(join(repoDir, 'data', p))).mtimeMs}`));
  const after = await reopen();
  expect((await after.snapshots()).map((s) => s.id)).toEqual([first.snapshotId]);
  const result = await prune(after);
  expect(result.packsDeleted + result.unindexedPacks, JSON.stringify({ result, left, indexes: await readdir(join(repoDir, 'index')).catch(() => []) })).toBeGreaterThan(1);
  expect(result.packsRepacked).toBe(0);
  expect(await packs(repoDir)).toEqual(live);
  expect((await readdir(join(repoDir, 'data'), { recursive: true })).filter((n) => n.includes('.tmp-'))).toEqual([]);
  await checkAndRestore(after, [{ id: first.snapshotId, tree }], 'after');
  await repo.close();
});

it('a prune killed at any step leaves a repository that checks and restores, and the next prune finishes the work', async () => {
  const { repo, dir: repoDir, keyHex, reopen } = await openTestRepo(dir);
  const src = join(dir, 'src');
  const gone = join(dir, 'gone');
  await mkdir(src);
  await mkdir(gone);
  for (let i = 0; i < 4; i++) await writeRandomFile(join(src, `f${i}.bin`), 3 * MiB + i);
  await writeRandomFile(join(gone, 'g.bin'), 5 * MiB);
  const first = await backup(repo, { source: src, ...opts });
  const dropped = await backup(repo, { source: gone, ...opts });
  for (let i = 0; i < 3; i++) await rm(join(src, `f${i}.bin`));
  const second = await backup(repo, { source: src, ...opts });
  const kept = [{ id: second.snapshotId, tree: await describeTree(src) }];
  await forget(repo, first.snapshotId);
  await forget(repo, dropped.snapshotId);
  const plan = await prune(repo, { dryRun: true });
  expect(plan.packsRepacked).toBeGreaterThan(0);
  expect(plan.packsDeleted).toBeGreaterThan(0);

  // Killed while the new packs are written (no new index yet), then once the index is replaced and one pack deleted.
  for (const pauseAt of [`repacking:${plan.packsRepacked}`, `deleting:${plan.packsRepacked + 1}`]) {
    const run = await runAndKill(repoDir, keyHex, ['prune'], (msg) => `${msg.progress?.phase}:${msg.progress?.packsDone}` === pauseAt, pauseAt);
    expect(run.killed).toBe(true);
    await checkAndRestore(await reopen(), kept, pauseAt.replace(':', '-'));
  }
  const last = await reopen();
  await prune(last);
  const result = await check(last, { readData: true });
  expect(result.ok).toBe(true);
  expect(result.unindexedPacks).toBe(0);
  expect(result.unusedBytes).toBe(0);
  expect(await readdir(join(repoDir, 'prune'))).toEqual([]);
  expect(await readdir(join(repoDir, 'locks'))).toEqual([]);
  // What is left is what an uninterrupted prune would have left.
  let size = 0;
  for (const f of await allFiles(repoDir)) size += (await stat(f)).size;
  expect(Math.abs(size - plan.bytesRemaining)).toBeLessThanOrEqual(0.05 * plan.bytesRemaining);
  await checkAndRestore(last, kept, 'last');
  await repo.close();
}, 120_000);

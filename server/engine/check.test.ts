import { copyFile, mkdir, open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Repository, backup, check, prune, restore } from './index.ts';
import { LocalBackend } from './storage/local.ts';
import { GatedBackend } from './testing/gated-backend.ts';
import { describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { openTestRepo, t } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;
const MiB = 1024 * 1024;
const opts = { compression: 'zstd', encryption: true, deduplication: true } as const;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-check-'));
});
afterEach(async () => {
  await cleanup();
});

async function packFiles(repoDir: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const p of await readdir(join(repoDir, 'data'), { recursive: true }).catch(() => [])) {
    if (/[0-9a-f]{64}$/.test(p)) out.set(p, (await stat(join(repoDir, 'data', p))).size);
  }
  return out;
}

it('a flipped byte in one pack: check with read_data names exactly the backups and paths that use it; the others restore', async () => {
  const { repo, dir: repoDir, reopen } = await openTestRepo(dir);
  const a = join(dir, 'a');
  const b = join(dir, 'b');
  const c = join(dir, 'c');
  await mkdir(a);
  await mkdir(b);
  await mkdir(join(c, 'sub'), { recursive: true });
  await writeRandomFile(join(a, 'a.bin'), 2 * MiB);
  await writeRandomFile(join(b, 'b.bin'), 2 * MiB);
  const before = await packFiles(repoDir);
  const backupA = await backup(repo, { source: a, ...opts });
  // The data pack backup A wrote: the larger of its new packs (the other holds its tree).
  const added = [...(await packFiles(repoDir))].filter(([p]) => !before.has(p)).sort((x, y) => y[1] - x[1]);
  const [damaged, size] = added[0]!;
  const backupB = await backup(repo, { source: b, ...opts });
  await copyFile(join(a, 'a.bin'), join(c, 'sub', 'a.bin'));
  await writeRandomFile(join(c, 'other.bin'), MiB);
  const backupC = await backup(repo, { source: c, ...opts });

  expect((await check(repo, { readData: true })).ok).toBe(true);
  const fh = await open(join(repoDir, 'data', damaged), 'r+');
  const at = Math.floor(size / 3);
  const byte = Buffer.alloc(1);
  await fh.read(byte, 0, 1, at);
  byte[0]! ^= 0x40;
  await fh.write(byte, 0, 1, at);
  await fh.close();

  const fresh = await reopen();
  const result = await check(fresh, { readData: true });
  expect(result.ok).toBe(false);
  expect(result.problemCount).toBeGreaterThanOrEqual(1);
  expect(result.problems.some((p) => p.pack === damaged.slice(3))).toBe(true);
  const affected = result.affected.map((x) => ({ snapshotId: x.snapshotId, paths: x.paths.map(t) })).sort((x, y) => x.snapshotId.localeCompare(y.snapshotId));
  expect(affected).toEqual(
    [
      { snapshotId: backupA.snapshotId, paths: ['a.bin'] },
      { snapshotId: backupC.snapshotId, paths: ['sub/a.bin'] },
    ].sort((x, y) => x.snapshotId.localeCompare(y.snapshotId)),
  );
  // The structure alone does not read file data: it passes.
  expect((await check(fresh)).ok).toBe(true);
  // A subset of 0 % reads nothing; 100 % reads every pack.
  expect((await check(fresh, { readDataSubset: 0 })).packsRead).toBe(0);
  expect((await check(fresh, { readDataSubset: 1 })).ok).toBe(false);

  await restore(fresh, backupB.snapshotId, { target: join(dir, 'out-b'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out-b'))).toEqual(await describeTree(b));
});

it('a backup that commits while a check or a prune lists the repository is no damage to them', async () => {
  const { repo, dir: repoDir, key } = await openTestRepo(dir);
  const src = join(dir, 'src');
  await mkdir(src);
  await writeRandomFile(join(src, 'first.bin'), MiB);
  await backup(repo, { source: src, ...opts });
  const gated = new GatedBackend(new LocalBackend(repoDir));
  const observer = await Repository.open(gated, key);
  let n = 0;
  // The other writer commits just as the operation lists the snapshots.
  const commit = async (): Promise<void> => {
    await writeRandomFile(join(src, `more${n++}.bin`), MiB);
    await backup(await Repository.open(new LocalBackend(repoDir), key), { source: src, ...opts });
  };
  gated.before('snapshots/', commit);
  const checked = await check(observer);
  expect(checked.problems).toEqual([]);
  gated.before('snapshots/', commit);
  const pruned = await prune(observer);
  expect(pruned.snapshots).toBe(3);
  expect((await check(observer, { readData: true })).ok).toBe(true);
});

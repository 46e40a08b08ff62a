import { execFileSync } from 'node:child_process';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Repository, backup, newMasterKey, restore, verify } from './index.ts';
import { LocalBackend } from './storage/local.ts';
import { allFiles, describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { openTestRepo } from './testing/repo.ts';
import { mountTmpfs } from './testing/tmpfs.ts';

/** A full disk is STORAGE_FULL, never a half-written object or file; after space is freed, the next backup works. */
let dir: string;
let cleanup: () => Promise<void>;
let unmount: (() => void) | null = null;
let small: string;
const MiB = 1024 * 1024;
const opts = { compression: 'none', encryption: true, deduplication: true } as const;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-full-'));
  small = join(dir, 'small');
  unmount = await mountTmpfs(small, '8m');
});
afterEach(async () => {
  unmount?.();
  unmount = null;
  await cleanup();
});

it('fails a backup into a full repository with STORAGE_FULL, leaves nothing half-written, and backs up once space is freed', async () => {
  const filler = join(small, 'filler');
  await writeRandomFile(filler, 4 * MiB);
  const repoDir = join(small, 'repo');
  const repo = await Repository.open(new LocalBackend(repoDir), newMasterKey());
  const src = join(dir, 'src');
  await mkdir(src);
  for (let i = 0; i < 5; i++) await writeRandomFile(join(src, `f${i}.bin`), MiB);
  await writeFile(join(src, 'note.txt'), 'note');

  await expect(backup(repo, { source: src, ...opts })).rejects.toMatchObject({ code: 'STORAGE_FULL' });
  expect((await allFiles(repoDir)).filter((f) => f.includes('.tmp-'))).toEqual([]);
  expect(await readdir(join(repoDir))).not.toContain('snapshots');
  expect((await verify(repo)).errors).toEqual([]);

  await rm(filler);
  const result = await backup(repo, { source: src, ...opts });
  expect(result.warnings.count).toBe(0);
  await restore(repo, result.snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out'))).toEqual(await describeTree(src));
});

it('fails a restore onto a full target with STORAGE_FULL and removes its temp files', async () => {
  const { repo } = await openTestRepo(dir);
  const src = join(dir, 'src');
  await mkdir(src);
  for (let i = 0; i < 3; i++) await writeRandomFile(join(src, `f${i}.bin`), 3 * MiB);
  for (let i = 0; i < 20; i++) await writeFile(join(src, `small${i}.txt`), `small ${i}`);
  const { snapshotId } = await backup(repo, { source: src, ...opts });
  const target = join(small, 'target');
  await expect(restore(repo, snapshotId, { target, overwrite: 'never' })).rejects.toMatchObject({ code: 'STORAGE_FULL' });
  expect((await allFiles(target)).filter((f) => f.includes('.restore-'))).toEqual([]);
  // What is there is whole: every file under its real name has its full content.
  const [got, want] = [await describeTree(target, { mtimes: false }), await describeTree(src, { mtimes: false })];
  for (const [path, entry] of Object.entries(got)) if (entry.type === 'file') expect(entry.sha256).toBe(want[path]?.sha256);
});

it('fails on a storage that refuses writes (read-only) with DESTINATION_UNAVAILABLE', async () => {
  const repoDir = join(small, 'repo');
  const key = newMasterKey();
  const repo = await Repository.open(new LocalBackend(repoDir), key);
  const src = join(dir, 'src');
  await mkdir(src);
  await writeFile(join(src, 'note.txt'), 'note');
  await backup(repo, { source: src, ...opts });
  await mkdir(join(small, 'empty'));
  execFileSync('mount', ['-o', 'remount,ro', small]);
  await expect(backup(repo, { source: src, ...opts })).rejects.toMatchObject({ code: 'DESTINATION_UNAVAILABLE' }); // the snapshot header cannot be saved
  await expect(Repository.open(new LocalBackend(join(small, 'empty')), key)).rejects.toMatchObject({ code: 'DESTINATION_UNAVAILABLE' });
});

import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { backup, restore, verify } from './index.ts';
import { describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { runAndKill } from './testing/child.ts';
import { openTestRepo } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;
const MiB = 1024 * 1024;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-crash-'));
});
afterEach(async () => {
  await cleanup();
});

/** Runs a backup in a child process and SIGKILLs it once it has read `killAfter` bytes (stopped dead there, so the kill cannot land after the end). */
async function backupAndKill(repoDir: string, keyHex: string, source: string, killAfter: number): Promise<{ killed: boolean; bytesDone: number }> {
  const run = await runAndKill(repoDir, keyHex, ['backup', source], (msg) => (msg.progress?.bytesDone ?? 0) >= killAfter, `bytes:${killAfter}`);
  return { killed: run.killed, bytesDone: run.last?.progress?.bytesDone ?? 0 };
}

it('survives SIGKILL mid-backup: the repository verifies, older snapshots restore, the next backup reuses stored data', async () => {
  const src = join(dir, 'src');
  await mkdir(join(src, 'base'), { recursive: true });
  for (let i = 0; i < 3; i++) await writeRandomFile(join(src, 'base', `keep${i}.bin`), 2 * MiB + i);
  const { repo, dir: repoDir, keyHex, reopen } = await openTestRepo(dir);
  const first = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  const chunksOfFirst = repo.index.size;
  await repo.close();
  const firstTree = await describeTree(src);

  await mkdir(join(src, 'bulk'));
  const bulkBytes = 30 * 12 * MiB;
  for (let i = 0; i < 30; i++) await writeRandomFile(join(src, 'bulk', `f${String(i).padStart(2, '0')}.bin`), 12 * MiB);

  // Well before the end: progress is reported every 100 ms, and the report after the snapshot
  // is saved must not be the first one past the mark.
  const run = await backupAndKill(repoDir, keyHex, src, 224 * MiB);
  expect(run.killed).toBe(true);
  expect(run.bytesDone).toBeLessThan(bulkBytes);
  expect((await readdir(join(repoDir, 'data'), { recursive: true })).length).toBeGreaterThan(8); // it did write packs

  // The packs it was filling are temp files beside the repository's objects, never under a pack's name; a prune's sweep removes them.
  const temps = (await readdir(repoDir, { recursive: true })).filter((f) => f.includes('.tmp-'));
  expect(temps.length).toBeGreaterThan(0);
  for (const f of temps) expect(f).toMatch(/^\.object\.tmp-[0-9a-f]+$/);
  const after = await reopen();
  expect(await after.backend.removeUnfinished!(new Date(Date.now() + 1000))).toMatchObject({ count: temps.length });
  expect((await readdir(repoDir, { recursive: true })).filter((f) => f.includes('.tmp-'))).toEqual([]);
  expect((await after.snapshots()).map((s) => s.id)).toEqual([first.snapshotId]);
  const check = await verify(after);
  expect(check.errors).toEqual([]);
  // The killed backup had written index files for some of its packs: those chunks count as stored.
  const indexedByKilled = after.index.size - chunksOfFirst;
  expect(indexedByKilled).toBeGreaterThan(8);
  expect(check.chunksChecked).toBe(after.index.size);

  await restore(after, first.snapshotId, { target: join(dir, 'out-first'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out-first'))).toEqual(firstTree);

  const next = await backup(after, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  expect(next.warnings.count).toBe(0);
  expect(next.files).toBe(33);
  // The base files come from the first snapshot, and the packs the killed backup had indexed are reused.
  expect(next.storedBytes).toBeLessThan(bulkBytes - indexedByKilled * 256 * 1024);
  expect((await verify(after, next.snapshotId)).errors).toEqual([]);
  await restore(after, next.snapshotId, { target: join(dir, 'out-next'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out-next'))).toEqual(await describeTree(src));
  await after.close();
}, 180_000); // ~300 MB written and backed up: minutes on a loaded machine

it('survives SIGKILL mid-restore: every name shows a whole file, and the next restore completes the tree', async () => {
  const src = join(dir, 'src');
  const files = 4000;
  for (let d = 0; d < files / 100; d++) {
    await mkdir(join(src, `d${String(d).padStart(2, '0')}`), { recursive: true });
    for (let f = 0; f < 100; f++) await writeFile(join(src, `d${String(d).padStart(2, '0')}`, `f${f}.txt`), `file ${d}/${f}\n`.repeat(1 + ((d * 7 + f) % 50)));
  }
  await mkdir(join(src, 'z-large')); // last in the walk: the kill lands while they are being written
  // 128 MiB after the kill mark: progress is reported every 100 ms, and the first report past a
  // mark close to the end could be the last one, after everything was shown.
  for (let i = 0; i < 8; i++) await writeRandomFile(join(src, 'z-large', `f${i}.bin`), 16 * MiB);
  const { repo, dir: repoDir, keyHex } = await openTestRepo(dir);
  const { snapshotId } = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  const source = await describeTree(src);
  const smallBytes = Object.entries(source).reduce((n, [p, e]) => n + (p.startsWith('z-large/') ? 0 : (e.size ?? 0)), 0);

  const target = join(dir, 'target');
  // The child stops dead at that report, so the kill cannot land after the restore ended.
  const killAt = smallBytes + 2 * MiB;
  const run = await runAndKill(repoDir, keyHex, ['restore', snapshotId, target], (msg) => (msg.progress?.bytesDone ?? 0) >= killAt, `bytes:${killAt}`);
  expect(run.killed).toBe(true);
  const done = run.last?.progress?.filesDone ?? 0;

  // Under its real path, a file is the source's whole file (after a crash too); what the kill
  // interrupted is left under temp names: temp files, and directories the restore made that were
  // still hidden (their files inside under real names).
  const after = await describeTree(target);
  const isTemp = (p: string): boolean => p.split('/').some((name) => name.startsWith('.restore-'));
  expect(Object.keys(after).filter(isTemp).length).toBeGreaterThan(0);
  const visible = Object.keys(after).filter((p) => !isTemp(p) && after[p]!.type === 'file');
  for (const p of visible) expect({ p, ...after[p]!, mtimeMs: undefined }).toEqual({ p, ...source[p]!, mtimeMs: undefined });
  expect(visible.length + Object.keys(after).filter(isTemp).length).toBeGreaterThanOrEqual(done);
  expect(visible.length).toBeLessThan(files + 8);

  const again = await restore(repo, snapshotId, { target, overwrite: 'if_changed' });
  expect(again.warnings.count).toBe(0);
  const whole = await describeTree(target);
  for (const p of Object.keys(whole)) if (isTemp(p)) delete whole[p];
  expect(whole).toEqual(source);
  await repo.close();
}, 180_000);

it('survives SIGKILL mid-restore of a deep tree whose directories the writer makes in order with their files: every name shows a whole file', async () => {
  // 20 branches 4 directories deep, files at every level before and after the subdirectory: the
  // kill lands with directories and files queued for the writer, some made and not yet shown.
  const src = join(dir, 'src');
  for (let t = 0; t < 20; t++) {
    let at = join(src, `t${String(t).padStart(2, '0')}`);
    for (let level = 0; level < 4; level++) {
      await mkdir(join(at, 'm'), { recursive: true });
      for (let f = 0; f < 25; f++) {
        await writeFile(join(at, `a${f}.txt`), `${t}/${level}/a${f}\n`.repeat(1 + ((t + f) % 40)));
        await writeFile(join(at, `z${f}.txt`), `${t}/${level}/z${f}\n`.repeat(1 + ((t * 3 + f) % 40)));
      }
      at = join(at, 'm');
    }
  }
  const { repo, dir: repoDir, keyHex } = await openTestRepo(dir);
  const { snapshotId } = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  const source = await describeTree(src);
  const bytes = Object.values(source).reduce((n, e) => n + (e.size ?? 0), 0);

  const target = join(dir, 'target');
  const killAt = Math.floor(bytes / 2);
  const run = await runAndKill(repoDir, keyHex, ['restore', snapshotId, target], (msg) => (msg.progress?.bytesDone ?? 0) >= killAt, `bytes:${killAt}`);
  expect(run.killed).toBe(true);

  const after = await describeTree(target);
  const isTemp = (p: string): boolean => p.split('/').some((name) => name.startsWith('.restore-'));
  expect(Object.keys(after).filter(isTemp).length).toBeGreaterThan(0);
  const visible = Object.keys(after).filter((p) => !isTemp(p));
  for (const p of visible) {
    if (after[p]!.type === 'file') expect({ p, ...after[p]!, mtimeMs: undefined }).toEqual({ p, ...source[p]!, mtimeMs: undefined });
    else expect(after[p]!.type).toBe(source[p]!.type);
  }
  expect(visible.filter((p) => after[p]!.type === 'file').length).toBeLessThan(20 * 4 * 50);

  const again = await restore(repo, snapshotId, { target, overwrite: 'if_changed' });
  expect(again.warnings.count).toBe(0);
  const whole = await describeTree(target);
  for (const p of Object.keys(whole)) if (isTemp(p)) delete whole[p];
  expect(whole).toEqual(source);
  await repo.close();
}, 180_000);

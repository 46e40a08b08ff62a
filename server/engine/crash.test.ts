import { spawn } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { backup, restore, verify } from './index.ts';
import { describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
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

/** Runs a backup in a child process and SIGKILLs it once it has read `killAfter` bytes. */
function backupAndKill(repoDir: string, keyHex: string, source: string, killAfter: number): Promise<{ killed: boolean; bytesDone: number }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'testing/backup-child.ts'), repoDir, 'backup', source], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ENGINE_KEY: keyHex },
  });
  let bytesDone = 0;
  let finished = false;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = JSON.parse(line) as { progress?: { bytesDone: number }; done?: unknown };
    if (msg.done) finished = true;
    if (msg.progress) bytesDone = msg.progress.bytesDone;
    if (bytesDone >= killAfter && !finished) child.kill('SIGKILL');
  });
  return new Promise((resolve) => child.on('exit', (_code, signal) => resolve({ killed: signal === 'SIGKILL' && !finished, bytesDone })));
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
  const bulkBytes = 24 * 12 * MiB;
  for (let i = 0; i < 24; i++) await writeRandomFile(join(src, 'bulk', `f${String(i).padStart(2, '0')}.bin`), 12 * MiB);

  const run = await backupAndKill(repoDir, keyHex, src, 224 * MiB);
  expect(run.killed).toBe(true);
  expect(run.bytesDone).toBeLessThan(bulkBytes);
  expect((await readdir(join(repoDir, 'data'), { recursive: true })).length).toBeGreaterThan(8); // it did write packs

  const after = await reopen();
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
  expect(next.files).toBe(27);
  // The base files come from the first snapshot, and the packs the killed backup had indexed are reused.
  expect(next.storedBytes).toBeLessThan(bulkBytes - indexedByKilled * 256 * 1024);
  expect((await verify(after, next.snapshotId)).errors).toEqual([]);
  await restore(after, next.snapshotId, { target: join(dir, 'out-next'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out-next'))).toEqual(await describeTree(src));
  await after.close();
});

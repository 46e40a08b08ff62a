import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Repository, backup, listEntries, masterKeyFromBytes, masterKeyToBytes, newMasterKey, restore, verify } from './index.ts';
import { LocalBackend } from './storage/local.ts';
import { describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { openTestRepo, t } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await cleanup();
});

describe('opening', () => {
  it('creates only a config on first open, and reopens with the same key', async () => {
    const { repo, reopen } = await openTestRepo(dir);
    await repo.close();
    expect((await readdir(join(dir, 'repo'))).sort()).toEqual(['config']);
    const again = await reopen();
    expect(again.id).toBe(repo.id);
    expect(again.version).toBe(2);
    await again.close();
  });

  it('rejects another key with WRONG_KEY', async () => {
    await openTestRepo(dir);
    await expect(Repository.open(new LocalBackend(join(dir, 'repo')), newMasterKey())).rejects.toMatchObject({ code: 'WRONG_KEY' });
  });

  it('gives the key back from its 64-byte form', async () => {
    const key = newMasterKey();
    const { repo } = await openTestRepo(dir, key);
    const again = await Repository.open(new LocalBackend(join(dir, 'repo')), masterKeyFromBytes(masterKeyToBytes(key)));
    expect(again.id).toBe(repo.id);
    expect(() => masterKeyFromBytes(new Uint8Array(10))).toThrow(/64 bytes/);
  });

  it('refuses storage that holds objects but no repository', async () => {
    await mkdir(join(dir, 'busy'));
    await writeFile(join(dir, 'busy', 'file.txt'), 'x');
    await expect(Repository.open(new LocalBackend(join(dir, 'busy')), newMasterKey())).rejects.toMatchObject({ code: 'NOT_A_REPOSITORY' });
  });

  it('initialises once when opened concurrently', async () => {
    const key = newMasterKey();
    const repos = await Promise.all([1, 2, 3].map(() => Repository.open(new LocalBackend(join(dir, 'repo')), key)));
    expect(new Set(repos.map((r) => r.id)).size).toBe(1);
    await Promise.all(repos.map((r) => r.close()));
  });

  it('refuses work after close', async () => {
    const { repo } = await openTestRepo(dir);
    await repo.close();
    await expect(verify(repo)).rejects.toMatchObject({ code: 'REPOSITORY_CLOSED' });
  });
});

describe('concurrency', () => {
  it('runs two backups into the same repository at once, plus a restore and a verify meanwhile', async () => {
    const { repo: repoA, reopen } = await openTestRepo(dir);
    const repoB = await reopen();
    const srcA = join(dir, 'a');
    const srcB = join(dir, 'b');
    await mkdir(srcA);
    await mkdir(srcB);
    await writeFile(join(srcA, 'small'), 'first');
    const first = await backup(repoA, { source: srcA, compression: 'zstd', encryption: true, deduplication: true });
    for (let i = 0; i < 4; i++) await writeRandomFile(join(srcA, `a${i}`), 6 * 1024 * 1024);
    for (let i = 0; i < 4; i++) await writeRandomFile(join(srcB, `b${i}`), 6 * 1024 * 1024);
    await writeRandomFile(join(srcB, 'shared'), 5 * 1024 * 1024);
    await writeFile(join(srcA, 'shared'), await readFile(join(srcB, 'shared')));

    const [a, b, restored, checked] = await Promise.all([
      backup(repoA, { source: srcA, compression: 'zstd', encryption: true, deduplication: true }),
      backup(repoB, { source: srcB, compression: 'zstd', encryption: true, deduplication: true }),
      restore(repoA, first.snapshotId, { target: join(dir, 'out-first'), overwrite: 'never' }),
      verify(repoB, first.snapshotId),
    ]);
    expect(restored.filesRestored).toBe(1);
    expect(a.warnings.count + b.warnings.count).toBe(0);
    expect(checked.errors).toEqual([]);
    expect((await verify(repoA)).errors).toEqual([]);
    await restore(repoB, a.snapshotId, { target: join(dir, 'out-a'), overwrite: 'never' });
    await restore(repoA, b.snapshotId, { target: join(dir, 'out-b'), overwrite: 'never' });
    expect(await describeTree(join(dir, 'out-a'))).toEqual(await describeTree(srcA));
    expect(await describeTree(join(dir, 'out-b'))).toEqual(await describeTree(srcB));
    expect((await repoA.snapshots()).map((s) => s.id).sort()).toEqual([first.snapshotId, a.snapshotId, b.snapshotId].sort());
    const listed: string[] = [];
    for await (const e of listEntries(repoB, a.snapshotId)) listed.push(t(e.path));
    expect(listed).toContain('shared');
    await repoA.close();
    await repoB.close();
  });
});

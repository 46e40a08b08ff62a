import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Repository, backup, listEntries, restore, verify } from './index.ts';
import { describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await cleanup();
});

describe('opening', () => {
  it('creates the layout on first open and reopens with the same password', async () => {
    const repo = await Repository.open(join(dir, 'repo'), { password: 'pw' });
    await repo.close();
    expect((await readdir(join(dir, 'repo'))).sort()).toEqual(['config', 'keys']);
    const again = await Repository.open(join(dir, 'repo'), { password: 'pw' });
    expect(again.id).toBe(repo.id);
    await again.close();
  });

  it('rejects a wrong password with WRONG_PASSWORD', async () => {
    (await Repository.open(join(dir, 'repo'), { password: 'pw' })).close();
    await expect(Repository.open(join(dir, 'repo'), { password: 'nope' })).rejects.toMatchObject({ code: 'WRONG_PASSWORD' });
  });

  it('works with a key file, and a different key file does not open it', async () => {
    await writeFile(join(dir, 'key'), randomBytes(64));
    await writeFile(join(dir, 'other'), randomBytes(64));
    const repo = await Repository.open(join(dir, 'repo'), { keyFile: join(dir, 'key') });
    const src = join(dir, 'src');
    await mkdir(src);
    await writeFile(join(src, 'f'), 'data');
    const { snapshotId } = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
    await repo.close();
    const again = await Repository.open(join(dir, 'repo'), { keyFile: join(dir, 'key') });
    await restore(again, snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
    expect(await readFile(join(dir, 'out/f'), 'utf8')).toBe('data');
    await again.close();
    await expect(Repository.open(join(dir, 'repo'), { keyFile: join(dir, 'other') })).rejects.toMatchObject({ code: 'WRONG_PASSWORD' });
    await expect(Repository.open(join(dir, 'repo'), { keyFile: join(dir, 'missing') })).rejects.toMatchObject({ code: 'KEY_FILE_UNREADABLE' });
  });

  it('refuses a non-empty directory that holds no repository', async () => {
    await mkdir(join(dir, 'busy'));
    await writeFile(join(dir, 'busy', 'file.txt'), 'x');
    await expect(Repository.open(join(dir, 'busy'), { password: 'pw' })).rejects.toMatchObject({ code: 'NOT_A_REPOSITORY' });
  });

  it('initialises once when opened concurrently', async () => {
    const repos = await Promise.all([1, 2, 3].map(() => Repository.open(join(dir, 'repo'), { password: 'pw' })));
    expect(new Set(repos.map((r) => r.id)).size).toBe(1);
    expect(await readdir(join(dir, 'repo', 'keys'))).toHaveLength(1);
    await Promise.all(repos.map((r) => r.close()));
  });

  it('refuses work after close', async () => {
    const repo = await Repository.open(join(dir, 'repo'), { password: 'pw' });
    await repo.close();
    await expect(verify(repo)).rejects.toMatchObject({ code: 'REPOSITORY_CLOSED' });
  });
});

describe('concurrency', () => {
  it('runs two backups into the same repository at once, plus a restore and a verify meanwhile', async () => {
    const repoA = await Repository.open(join(dir, 'repo'), { password: 'pw' });
    const repoB = await Repository.open(join(dir, 'repo'), { password: 'pw' });
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
    expect(checked.errors).toEqual([]);
    expect((await verify(repoA)).errors).toEqual([]);
    await restore(repoB, a.snapshotId, { target: join(dir, 'out-a'), overwrite: 'never' });
    await restore(repoA, b.snapshotId, { target: join(dir, 'out-b'), overwrite: 'never' });
    expect(await describeTree(join(dir, 'out-a'))).toEqual(await describeTree(srcA));
    expect(await describeTree(join(dir, 'out-b'))).toEqual(await describeTree(srcB));
    expect((await repoA.snapshots()).map((s) => s.id).sort()).toEqual([first.snapshotId, a.snapshotId, b.snapshotId].sort());
    const listed: string[] = [];
    for await (const e of listEntries(repoB, a.snapshotId)) listed.push(e.path);
    expect(listed).toContain('shared');
    await repoA.close();
    await repoB.close();
  });
});

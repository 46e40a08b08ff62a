import { mkdir, open, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { backup, restore, verify } from './index.ts';
import type { EngineError, MasterKey, Repository } from './index.ts';
import { allFiles, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { openTestRepo } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;
let repo: Repository;
let key: MasterKey;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
  ({ repo, key } = await openTestRepo(dir));
});
afterEach(async () => {
  await repo.close();
  await cleanup();
});

/** The repository's packs, largest first (a small backup has one data pack and one tree pack). */
async function packsBySize(): Promise<string[]> {
  const files = (await allFiles(join(dir, 'repo', 'data'))).filter((f) => !f.includes('.tmp-'));
  const sizes = new Map(await Promise.all(files.map(async (f) => [f, (await stat(f)).size] as const)));
  return files.sort((a, b) => sizes.get(b)! - sizes.get(a)!);
}

async function flipByte(file: string, at: number): Promise<void> {
  const fh = await open(file, 'r+');
  const b = Buffer.alloc(1);
  await fh.read(b, 0, 1, at);
  b[0] = b[0]! ^ 0x01;
  await fh.write(b, 0, 1, at);
  await fh.close();
}

for (const encryption of [true, false]) {
  it(`detects a flipped byte in a pack with verify and restore (encryption ${encryption}), leaving no partial file`, async () => {
    const src = join(dir, 'src');
    await mkdir(src);
    await writeRandomFile(join(src, 'victim.bin'), 6 * 1024 * 1024);
    const { snapshotId } = await backup(repo, { source: src, compression: 'zstd', encryption, deduplication: true });
    expect((await verify(repo, snapshotId)).errors).toEqual([]);

    const packs = await packsBySize();
    expect(packs).toHaveLength(2);
    await flipByte(packs[0]!, 3 * 1024 * 1024);

    const report = await verify(repo, snapshotId);
    expect(report.chunksChecked).toBeGreaterThan(2);
    expect(report.errors).toHaveLength(1);
    expect(report.errors[0]).toMatchObject({ path: 'victim.bin' });
    expect(report.errors[0]!.chunk).toMatch(/^[0-9a-f]{64}$/);
    expect((await verify(repo)).errors).toHaveLength(1);

    const out = join(dir, 'out');
    const err = (await restore(repo, snapshotId, { target: out, overwrite: 'never' }).catch((e: unknown) => e)) as EngineError;
    expect(err.code).toBe('CORRUPT_DATA');
    expect(err.message).toContain('victim.bin');
    expect(err.details).toMatchObject({ path: 'victim.bin' });
    expect(await readdir(out)).toEqual([]);
  });
}

it('detects a missing pack', async () => {
  const src = join(dir, 'src');
  await mkdir(src);
  await writeRandomFile(join(src, 'x.bin'), 1024 * 1024);
  const { snapshotId } = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  const [pack] = await packsBySize();
  const { rm } = await import('node:fs/promises');
  await rm(pack!);
  const report = await verify(repo, snapshotId);
  expect(report.errors.length).toBeGreaterThan(0);
  expect(report.errors[0]!.message).toMatch(/missing/);
  await expect(restore(repo, snapshotId, { target: join(dir, 'out'), overwrite: 'never' })).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
});

it('detects a damaged tree and a damaged snapshot header', async () => {
  const src = join(dir, 'src');
  await mkdir(src);
  await writeRandomFile(join(src, 'x.bin'), 1000);
  const { snapshotId } = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  const [, treePack] = await packsBySize();
  await flipByte(treePack!, 20);
  await expect(restore(repo, snapshotId, { target: join(dir, 'out'), overwrite: 'never' })).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
  expect((await verify(repo, snapshotId)).errors).toHaveLength(1);
  const header = join(dir, 'repo', 'snapshots', snapshotId);
  await flipByte(header, (await stat(header)).size - 5);
  const fresh = (await openTestRepo(dir, key)).repo;
  await expect(restore(fresh, snapshotId, { target: join(dir, 'out2'), overwrite: 'never' })).rejects.toMatchObject({ code: 'CORRUPT_DATA' });
  expect((await readFile(header)).length).toBeGreaterThan(0);
});

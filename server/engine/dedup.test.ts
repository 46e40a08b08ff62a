import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, open, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { BlobWriter } from './blob-writer.ts';
import { backup, restore, verify } from './index.ts';
import { WorkerPool } from './pool.ts';
import type { EntryRecord, Repository } from './index.ts';
import { allFiles, describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { openTestRepo } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;
let repo: Repository;
const MiB = 1024 * 1024;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
  ({ repo } = await openTestRepo(dir));
});
afterEach(async () => {
  await repo.close();
  await cleanup();
});

async function repoBytes(): Promise<number> {
  let n = 0;
  for (const f of await allFiles(join(dir, 'repo'))) n += (await readFile(f)).length;
  return n;
}

it('stores ten identical 8 MiB files about once', async () => {
  const src = join(dir, 'src');
  await mkdir(src);
  await writeRandomFile(join(src, 'f0'), 8 * MiB);
  for (let i = 1; i < 10; i++) await copyFile(join(src, 'f0'), join(src, `f${i}`));
  const result = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  expect(result.sizeBytes).toBe(80 * MiB);
  expect(result.storedBytes).toBeGreaterThan(8 * MiB);
  expect(result.storedBytes).toBeLessThan(8.2 * MiB);
  expect(await repoBytes()).toBeLessThan(8.3 * MiB);
  await restore(repo, result.snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out'))).toEqual(await describeTree(src));
});

it('stores every chunk again with deduplication off', async () => {
  const src = join(dir, 'src');
  await mkdir(src);
  await writeRandomFile(join(src, 'f0'), 4 * MiB);
  await copyFile(join(src, 'f0'), join(src, 'f1'));
  const result = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: false });
  expect(result.storedBytes).toBeGreaterThan(8 * MiB);
  const again = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: false });
  expect(again.storedBytes).toBeGreaterThan(8 * MiB);
});

it('adds only a few chunks after an edit in the middle of a large file', async () => {
  const src = join(dir, 'src');
  await mkdir(src);
  const file = join(src, 'large.bin');
  await writeRandomFile(file, 64 * MiB);
  const first = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  const chunksBefore = repo.index.size;
  expect(chunksBefore).toBeGreaterThan(40); // ~1 MiB average chunks

  // Insert 100 bytes in the middle: everything after shifts, yet only chunks near the edit change.
  const data = await readFile(file);
  await writeFile(file, Buffer.concat([data.subarray(0, 32 * MiB), Buffer.alloc(100, 7), data.subarray(32 * MiB)]));
  const second = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  const added = repo.index.size - chunksBefore;
  expect(added).toBeGreaterThanOrEqual(1);
  expect(added).toBeLessThanOrEqual(3);
  expect(second.storedBytes).toBeLessThan(9 * MiB);
  expect(second.storedBytes).toBeLessThan(first.storedBytes / 5);

  await restore(repo, second.snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out'))).toEqual(await describeTree(src));
});

it('re-reads nothing for unchanged files and only the changed file otherwise', async () => {
  const src = join(dir, 'src');
  await mkdir(src);
  for (let i = 0; i < 5; i++) await writeRandomFile(join(src, `f${i}`), 2 * MiB);
  await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  const unchanged = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  expect(unchanged.storedBytes).toBeLessThan(4096);
  const fh = await open(join(src, 'f3'), 'r+');
  await fh.write(Buffer.from('changed!'), 0, 8, 1000);
  await fh.close();
  const changed = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  expect(changed.storedBytes).toBeGreaterThan(256 * 1024);
  expect(changed.storedBytes).toBeLessThan(2.1 * MiB);
  await restore(repo, changed.snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out'))).toEqual(await describeTree(src));
});

it('never lets a plaintext copy satisfy an encrypted backup', async () => {
  const src = join(dir, 'src');
  await mkdir(src);
  const marker = 'PLAINTEXT-MARKER-3f9a1c7e';
  await writeFile(join(src, 'notes.txt'), `${marker}\n`.repeat(20000));
  const plain = await backup(repo, { source: src, compression: 'none', encryption: false, deduplication: true });
  expect(plain.storedBytes).toBeGreaterThan(20000 * marker.length);
  const encrypted = await backup(repo, { source: src, compression: 'none', encryption: true, deduplication: true });
  expect(encrypted.storedBytes).toBeGreaterThan(20000 * marker.length);
  // And the other way round: an encrypted copy serves a later encrypted backup.
  const again = await backup(repo, { source: src, compression: 'none', encryption: true, deduplication: true });
  expect(again.storedBytes).toBeLessThan(4096);
  expect((await verify(repo)).errors).toEqual([]);
});

it('with encryption on, a marker string of the source appears nowhere in the repository', async () => {
  const src = join(dir, 'src');
  await mkdir(join(src, 'MARKERDIR-c0ffee'), { recursive: true });
  const marker = 'SECRET-MARKER-8b2e4d71';
  await writeFile(join(src, 'MARKERDIR-c0ffee', 'a.txt'), `${marker} `.repeat(50000));
  await writeFile(join(src, 'small.txt'), marker);
  for (const compression of ['zstd', 'none'] as const) {
    await backup(repo, { source: src, compression, encryption: true, deduplication: false });
  }
  const needles = [marker, 'MARKERDIR-c0ffee', 'small.txt'].map((s) => Buffer.from(s));
  for (const f of await allFiles(join(dir, 'repo'))) {
    const bytes = await readFile(f);
    for (const needle of needles) expect(bytes.includes(needle), `${needle} in ${f}`).toBe(false);
  }
  // The same scan does find the marker once a backup is stored without encryption.
  await backup(repo, { source: src, compression: 'none', encryption: false, deduplication: true });
  let found = false;
  for (const f of await allFiles(join(dir, 'repo'))) if ((await readFile(f)).includes(Buffer.from(marker))) found = true;
  expect(found).toBe(true);
});

it('shares unchanged directories between snapshots, opens no unchanged file, and stores only the trees on the path to a change', async () => {
  const src = join(dir, 'src');
  for (const d of ['a', 'b', 'c/x/y']) await mkdir(join(src, d), { recursive: true });
  for (const d of ['a', 'b', 'c/x/y']) for (let i = 0; i < 3; i++) await writeFile(join(src, d, `f${i}.txt`), `${d} ${i}\n`);
  const opts = { compression: 'zstd', encryption: true, deduplication: true } as const;
  const trees = (): number => [...repo.index.table.slots()].filter((s) => repo.index.table.location(s).type === 'tree').length;
  const first = await backup(repo, { source: src, ...opts });
  expect(trees()).toBe(6); // root, a, b, c, c/x, c/x/y
  const packs = (await allFiles(join(dir, 'repo', 'data'))).length;

  const opened: string[] = [];
  const again = await backup(repo, { source: src, ...opts, beforeOpen: (path, type) => void (type === 'file' && opened.push(Buffer.from(path).toString())) });
  expect(opened).toEqual([]);
  expect((await repo.snapshot(again.snapshotId)).tree).toBe((await repo.snapshot(first.snapshotId)).tree);
  expect((await repo.snapshot(again.snapshotId)).parent).toBe(first.snapshotId);
  expect(again.storedBytes).toBeLessThan(1024); // the snapshot header only
  expect((await allFiles(join(dir, 'repo', 'data'))).length).toBe(packs);

  await writeFile(join(src, 'c/x/y/f1.txt'), 'changed\n');
  const changed = await backup(repo, { source: src, ...opts, beforeOpen: (path, type) => void (type === 'file' && opened.push(Buffer.from(path).toString())) });
  expect(opened).toEqual(['c/x/y/f1.txt']);
  expect(trees()).toBe(6 + 4); // root, c, c/x, c/x/y again; a and b shared
  await restore(repo, changed.snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out'))).toEqual(await describeTree(src));
});

it('reports the same entries and totals for an unchanged re-backup as for the first, and takes a directory replaced by a file as a change', async () => {
  const src = join(dir, 'src');
  for (const d of ['a', 'b/c', 'b/d']) await mkdir(join(src, d), { recursive: true });
  for (const d of ['a', 'b/c', 'b/d']) for (let i = 0; i < 3; i++) await writeFile(join(src, d, `f${i}.txt`), `${d} ${i}\n`);
  await symlink('a/f0.txt', join(src, 'link'));
  const opts = { compression: 'zstd', encryption: true, deduplication: true } as const;
  const run = async (): Promise<{ result: Awaited<ReturnType<typeof backup>>; entries: string[] }> => {
    const entries: string[] = [];
    const onEntries = (batch: EntryRecord[]): void => {
      for (const e of batch) entries.push(`${Buffer.from(e.path).toString()} ${e.type} ${e.size} ${e.mode} ${e.mtime.getTime()} ${e.sha256} ${e.linkTarget ? Buffer.from(e.linkTarget).toString() : ''}`);
    };
    const result = await backup(repo, { source: src, ...opts, onEntries });
    return { result, entries: entries.sort() };
  };
  const first = await run();
  expect(first.entries).toHaveLength(14); // a, b, b/c, b/d, link and 9 files
  const again = await run();
  expect(again.entries).toEqual(first.entries);
  expect([again.result.files, again.result.directories, again.result.sizeBytes]).toEqual([first.result.files, first.result.directories, first.result.sizeBytes]);
  expect((await repo.snapshot(again.result.snapshotId)).tree).toBe((await repo.snapshot(first.result.snapshotId)).tree);

  // b/d is now a file: b's listing differs from its tree, the root's does not (b is its only change).
  await rm(join(src, 'b/d'), { recursive: true });
  await writeFile(join(src, 'b/d'), 'now a file\n');
  const changed = await run();
  expect(changed.entries.filter((e) => e.startsWith('b/d'))).toEqual([expect.stringMatching(/^b\/d file 11 /)]);
  expect(changed.result.directories).toBe(first.result.directories - 1);
  await restore(repo, changed.result.snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out'))).toEqual(await describeTree(src));
});

it('stores a chunk that comes back seen while its first copy is neither pending nor stored: encoded after all', async () => {
  const pool = new WorkerPool(repo.key, 1);
  const opts = { comp: 1, level: undefined, encrypt: true } as const;
  const plain = new Uint8Array(randomBytes(300 * 1024));
  try {
    // The pool's table learns the id outside the writer, as when another thread is still encoding the first copy.
    expect((await pool.encode({ ...opts, skipSeen: true }, new Uint8Array(plain))).seen).toBeUndefined();
    const writer = new BlobWriter(repo, pool, opts, true);
    const id = await (await writer.store(new Uint8Array(plain)))();
    await writer.finish();
    expect(repo.index.has(id, 'data', true)).toBe(true);
    const read = await verify(repo);
    expect(read.errors).toEqual([]);
    expect(read.chunksChecked).toBe(1);
  } finally {
    await pool.stopped();
  }
});

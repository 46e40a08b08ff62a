import { closeSync, mkdirSync, openSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { backup, listEntries, restore } from './index.ts';
import type { EntryRecord, Repository } from './index.ts';
import { decodeListing, listDirectory } from './listing.ts';
import { childPath } from './snapshot.ts';
import { DIR_FLAGS, changedSinceWalk, fstatOpened } from './source.ts';
import { describeTree, tempDir } from './testing/fixtures.ts';
import { openTestRepo, t } from './testing/repo.ts';

/**
 * What the walk shares rather than copies: listing names are views of their listing, the names
 * posted to the workers lie side by side in shared buffers, and an opened object's status is
 * compared as numbers when they are exact.
 */
let dir: string;
let cleanup: () => Promise<void>;
let repo: Repository;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-walk-'));
  ({ repo } = await openTestRepo(dir));
});
afterEach(async () => {
  await repo.close();
  await cleanup();
});

it('backs up many files whose names fill several of the shared name buffers: each file is read under its own name', async () => {
  const src = join(dir, 'src');
  mkdirSync(join(src, 'sub'), { recursive: true });
  // 600 names of 40-250 bytes (about 85 KB of names, over 40 shared buffers), each file's content its name.
  for (let i = 0; i < 600; i++) {
    const name = `${String(i).padStart(4, '0')}-${'n'.repeat(36 + ((i * 37) % 211))}`;
    writeFileSync(join(src, i % 3 === 0 ? 'sub' : '', name), `${name}\n`.repeat(1 + (i % 5)));
  }
  const before = await describeTree(src);
  const listed: EntryRecord[] = [];
  const result = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true, onEntries: (batch) => void listed.push(...batch) });
  expect(result.warnings.count).toBe(0);
  expect(result.files).toBe(600);
  // Every path handed out has a buffer of its own (a view of a listing would hold the whole listing).
  for (const e of listed) expect(e.path.byteLength).toBe(e.path.buffer.byteLength);
  const target = join(dir, 'restored');
  await restore(repo, result.snapshotId, { target, overwrite: 'never' });
  expect(await describeTree(target)).toEqual(before);
  const names: string[] = [];
  for await (const e of listEntries(repo, result.snapshotId)) names.push(t(e.path));
  expect(names.sort()).toEqual(Object.keys(before).sort());
});

it('decodes a listing into entries whose names are views of it, and a path made from one at the root is a copy', () => {
  const src = join(dir, 'list');
  mkdirSync(src);
  for (const n of ['b', 'a', 'ccc']) writeFileSync(join(src, n), n);
  const fd = openSync(src, DIR_FLAGS);
  try {
    const listed = listDirectory(fd);
    if ('error' in listed) throw new Error(listed.error);
    const entries = decodeListing(listed.data);
    expect(entries.map((e) => t(e.name))).toEqual(['a', 'b', 'ccc']);
    for (const e of entries) expect(e.name.buffer).toBe(listed.data.buffer);
    const path = childPath(new Uint8Array(0), entries[2]!.name);
    expect(t(path)).toBe('ccc');
    expect(path.byteLength).toBe(path.buffer.byteLength);
    expect(entries[0]!.ino).toBe(statSync(join(src, 'a'), { bigint: true }).ino);
  } finally {
    closeSync(fd);
  }
});

it('compares an opened object with what the walk saw as numbers when exact, as bigints otherwise, and never takes a rounded inode for a match', () => {
  const file = join(dir, 'f');
  writeFileSync(file, 'x');
  const big = statSync(file, { bigint: true });
  const fd = openSync(file, 'r');
  try {
    const seen = { dev: big.dev, ino: big.ino };
    const st = fstatOpened(fd, seen);
    expect(typeof st.ino).toBe('number');
    expect(changedSinceWalk(st, { kind: 'f', ...seen })).toBeNull();
    expect(changedSinceWalk(st, { kind: 'd', ...seen })).toMatch(/replaced during the backup \(now a regular file\)/);
    expect(changedSinceWalk(st, { kind: 'f', dev: big.dev, ino: big.ino + 1n })).toMatch(/by another file/);
    // An inode the walk saw past 2^53: the status is taken with bigints, and compared exactly.
    const far = { dev: big.dev, ino: big.ino + 2n ** 60n };
    expect(typeof fstatOpened(fd, far).ino).toBe('bigint');
    expect(changedSinceWalk(fstatOpened(fd, far), { kind: 'f', ...far })).toMatch(/by another file/);
    // Numbers against an inode past 2^53 are refused (they could be rounded into a match), never taken for the same file.
    expect(changedSinceWalk(st, { kind: 'f', dev: big.dev, ino: 2n ** 53n + big.ino })).toMatch(/by another file/);
  } finally {
    closeSync(fd);
  }
});

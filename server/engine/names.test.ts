import { createHash } from 'node:crypto';
import { closeSync, lstatSync, mkdirSync, openSync, readFileSync, readdirSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { backup, listEntries, restore } from './index.ts';
import type { Repository } from './index.ts';
import { decodeListing, listDirectory } from './listing.ts';
import { DIR_FLAGS, atPath, fdDir } from './source.ts';
import { tempDir } from './testing/fixtures.ts';
import { openTestRepo } from './testing/repo.ts';

/** Names are bytes: names that are not UTF-8, and paths longer than PATH_MAX, round-trip byte for byte. */
let dir: string;
let cleanup: () => Promise<void>;
let repo: Repository;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-names-'));
  ({ repo } = await openTestRepo(dir));
});
afterEach(async () => {
  await repo.close();
  await cleanup();
});

const LATIN1_NAME = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74]); // "café.txt" in Latin-1: not UTF-8
const BROKEN = Buffer.from([0xff, 0xfe, 0x5c, 0x78, 0x41]); // invalid bytes and a backslash
const BROKEN_DIR = Buffer.from([0x64, 0x69, 0x72, 0xe9, 0xff]);
const LONG = (i: number): Buffer => Buffer.from(`${String(i).padStart(3, '0')}-${'d'.repeat(200)}`);
const DEPTH = 24; // 24 x 205 bytes: deeper than PATH_MAX (4096)

/** Builds the tree through directory handles (a path this long cannot be given to one system call). */
function makeTree(root: string): void {
  mkdirSync(root);
  let fd = openSync(root, DIR_FLAGS);
  writeFileSync(atPath(fd, LATIN1_NAME), 'latin-1 name\n');
  writeFileSync(atPath(fd, BROKEN), 'broken name\n');
  symlinkSync(Buffer.concat([Buffer.from('target-'), BROKEN]), atPath(fd, Buffer.from('link-to-bytes')));
  mkdirSync(atPath(fd, BROKEN_DIR));
  writeFileSync(atPath(fd, Buffer.concat([BROKEN_DIR, Buffer.from('/'), LATIN1_NAME])), 'in a directory whose name is not UTF-8\n');
  for (let i = 0; i < DEPTH; i++) {
    mkdirSync(atPath(fd, LONG(i)));
    const next = openSync(atPath(fd, LONG(i)), DIR_FLAGS);
    closeSync(fd);
    fd = next;
  }
  writeFileSync(atPath(fd, LATIN1_NAME), 'deep\n');
  closeSync(fd);
}

/** Every entry under root as [path hex, type, content sha256 or link target hex], read through handles. */
function describe(root: string): string[][] {
  const out: string[][] = [];
  const walk = (fd: number, rel: Buffer): void => {
    for (const name of readdirSync(fdDir(fd), { encoding: 'buffer' }).sort(Buffer.compare)) {
      const path = rel.length ? Buffer.concat([rel, Buffer.from('/'), name]) : name;
      const st = lstatSync(atPath(fd, name));
      if (st.isDirectory()) {
        out.push([path.toString('hex'), 'd', '']);
        const sub = openSync(atPath(fd, name), DIR_FLAGS);
        walk(sub, path);
        closeSync(sub);
      } else if (st.isSymbolicLink()) out.push([path.toString('hex'), 'l', readlinkSync(atPath(fd, name), { encoding: 'buffer' }).toString('hex')]);
      else out.push([path.toString('hex'), 'f', createHash('sha256').update(readFileSync(atPath(fd, name))).digest('hex')]);
    }
  };
  const fd = openSync(root, DIR_FLAGS);
  walk(fd, Buffer.alloc(0));
  closeSync(fd);
  return out;
}

it('backs up and restores names that are not UTF-8 and a path longer than 4096 bytes, byte-identical', async () => {
  const src = join(dir, 'src');
  makeTree(src);
  const before = describe(src);
  expect(before.length).toBe(5 + DEPTH + 1);
  const deepest = before.map((e) => Buffer.from(e[0]!, 'hex')).reduce((a, c) => (c.length > a.length ? c : a));
  expect(deepest.length).toBeGreaterThan(4096);

  const result = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
  expect(result.warnings.count).toBe(0);
  expect([result.files, result.directories]).toEqual([5, DEPTH + 1]);
  const paths: string[] = [];
  for await (const e of listEntries(repo, result.snapshotId)) {
    paths.push(Buffer.from(e.path).toString('hex'));
    if (e.type === 'symlink') expect(Buffer.from(e.linkTarget!)).toEqual(Buffer.concat([Buffer.from('target-'), BROKEN]));
  }
  expect(paths.sort()).toEqual(before.map((e) => e[0]!).sort());

  const out = join(dir, 'out');
  const restored = await restore(repo, result.snapshotId, { target: out, overwrite: 'never' });
  expect(restored).toMatchObject({ filesRestored: 5, warnings: { count: 0 } });
  expect(describe(out)).toEqual(before);

  // A subset given as byte paths, the deepest file included.
  const subset = join(dir, 'subset');
  await restore(repo, result.snapshotId, { target: subset, paths: [BROKEN, deepest], overwrite: 'never' });
  const got = describe(subset).map((e) => e[0]);
  expect(got).toContain(BROKEN.toString('hex'));
  expect(got).toContain(deepest.toString('hex'));
  expect(got).not.toContain(LATIN1_NAME.toString('hex'));
});

it('lists a directory in byte order of its names, every byte kept', () => {
  const src = join(dir, 'order');
  mkdirSync(src);
  const names = [LATIN1_NAME, BROKEN, BROKEN_DIR, Buffer.from('a'), Buffer.from('ab'), Buffer.from('B'), Buffer.from([0x7f]), Buffer.from([0x80]), Buffer.from('caf\u00e9', 'utf8')];
  for (const n of names) writeFileSync(atPath(-1, Buffer.concat([Buffer.from(`${src}/`), n])), '');
  const fd = openSync(src, DIR_FLAGS);
  try {
    const listed = listDirectory(fd);
    if ('error' in listed) throw new Error(listed.error);
    const got = decodeListing(listed.data).map((e) => Buffer.from(e.name).toString('hex'));
    expect(got).toEqual([...names].sort(Buffer.compare).map((n) => n.toString('hex')));
    expect(listed.files).toBe(names.length);
  } finally {
    closeSync(fd);
  }
});

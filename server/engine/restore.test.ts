import { randomBytes } from 'node:crypto';
import { chmod, cp, mkdir, readFile, readdir, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backup, forget, prune, restore } from './index.ts';
import type { Repository } from './index.ts';
import { Repository as RepositoryClass } from './repository.ts';
import { LocalBackend } from './storage/local.ts';
import { describeTree, tempDir } from './testing/fixtures.ts';
import { GatedBackend } from './testing/gated-backend.ts';
import { b, openTestRepo } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;
let repo: Repository;
let snapshotId: string;
let src: string;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
  ({ repo } = await openTestRepo(dir));
  src = join(dir, 'src');
  await mkdir(join(src, 'a/b'), { recursive: true });
  await mkdir(join(src, 'c'));
  await writeFile(join(src, 'a/one.txt'), 'one');
  await writeFile(join(src, 'a/b/two.txt'), 'two');
  await writeFile(join(src, 'c/three.txt'), 'three');
  await writeFile(join(src, 'top.txt'), 'top');
  ({ snapshotId } = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true }));
});
afterEach(async () => {
  await repo.close();
  await cleanup();
});

describe('subset restore', () => {
  it('restores only the named files and directories, keeping their relative paths', async () => {
    const out = join(dir, 'out');
    const result = await restore(repo, snapshotId, { target: out, paths: [b('a/b'), b('top.txt')], overwrite: 'never' });
    expect(result).toEqual({ filesRestored: 2, filesSkipped: 0, sizeBytes: 6, warnings: { count: 0, items: [] } });
    expect(Object.keys(await describeTree(out, { mtimes: false })).sort()).toEqual(['a', 'a/b', 'a/b/two.txt', 'top.txt']);
    expect(await readFile(join(out, 'a/b/two.txt'), 'utf8')).toBe('two');
  });

  it('reports the totals of what is selected, counted from the trees, before the files are written', async () => {
    for (const [paths, files, bytes] of [[undefined, 4, 14], [[b('a')], 2, 6], [[b('a/b/two.txt'), b('c')], 2, 8]] as const) {
      const totals: { filesTotal: number; bytesTotal: number }[] = [];
      let totalsSeen: () => void = () => {};
      const seen = new Promise<void>((resolve) => (totalsSeen = resolve));
      await restore(repo, snapshotId, {
        target: join(dir, `out-${files}-${bytes}`),
        ...(paths ? { paths: [...paths] } : {}),
        overwrite: 'always',
        onProgress: (p) => {
          if (p.filesTotal > 0 && p.filesDone === 0) {
            totals.push({ filesTotal: p.filesTotal, bytesTotal: p.bytesTotal });
            totalsSeen();
          }
        },
        beforeCreate: () => seen, // nothing is written until the count has reported
      });
      expect(totals[0]).toEqual({ filesTotal: files, bytesTotal: bytes });
    }
  });

  it('rejects a path that is not in the snapshot', async () => {
    await expect(restore(repo, snapshotId, { target: join(dir, 'out'), paths: [b('nope'), b('a/one.txt/x'), b('a/one.txt')], overwrite: 'never' })).rejects.toMatchObject({
      code: 'PATH_NOT_FOUND',
      details: { paths: ['nope', 'a/one.txt/x'] },
    });
  });

  it('never writes through a symlink planted in the target above a requested path', async () => {
    const out = join(dir, 'out');
    const outside = join(dir, 'outside');
    await mkdir(out);
    await mkdir(outside);
    await symlink(outside, join(out, 'a'));
    for (const paths of [[b('a/b')], [b('a/one.txt')], [b('a/b/two.txt')], undefined]) {
      await expect(restore(repo, snapshotId, { target: out, ...(paths ? { paths } : {}), overwrite: 'always' })).rejects.toMatchObject({
        code: 'RESTORE_CONFLICT',
        details: { path: 'a' },
      });
    }
    expect(await readdir(outside)).toEqual([]);
  });

  it('rejects an unknown snapshot with SNAPSHOT_NOT_FOUND', async () => {
    await expect(restore(repo, 'f'.repeat(64), { target: join(dir, 'out'), overwrite: 'never' })).rejects.toMatchObject({ code: 'SNAPSHOT_NOT_FOUND' });
    await expect(restore(repo, '../config', { target: join(dir, 'out'), overwrite: 'never' })).rejects.toMatchObject({ code: 'SNAPSHOT_NOT_FOUND' });
  });
});

describe('overwrite policies', () => {
  async function prepareTarget(): Promise<string> {
    const out = join(dir, 'out');
    await mkdir(join(out, 'a/b'), { recursive: true });
    await writeFile(join(out, 'a/one.txt'), 'one'); // same content as the snapshot
    await utimes(join(out, 'a/one.txt'), new Date('2000-01-01'), new Date('2000-01-01'));
    await writeFile(join(out, 'top.txt'), 'locally changed'); // differs
    return out;
  }

  it('never: keeps every existing file and counts it skipped', async () => {
    const out = await prepareTarget();
    const result = await restore(repo, snapshotId, { target: out, overwrite: 'never' });
    expect(result).toMatchObject({ filesRestored: 2, filesSkipped: 2, sizeBytes: 8 });
    expect(await readFile(join(out, 'top.txt'), 'utf8')).toBe('locally changed');
    expect((await stat(join(out, 'a/one.txt'))).mtime.getUTCFullYear()).toBe(2000);
  });

  it('if_changed: replaces files whose content differs and skips identical ones', async () => {
    const out = await prepareTarget();
    const result = await restore(repo, snapshotId, { target: out, overwrite: 'if_changed' });
    expect(result).toMatchObject({ filesRestored: 3, filesSkipped: 1, sizeBytes: 11 });
    expect(await readFile(join(out, 'top.txt'), 'utf8')).toBe('top');
    expect((await stat(join(out, 'a/one.txt'))).mtime.getUTCFullYear()).toBe(2000);
  });

  it('always: replaces every file', async () => {
    const out = await prepareTarget();
    const result = await restore(repo, snapshotId, { target: out, overwrite: 'always' });
    expect(result).toMatchObject({ filesRestored: 4, filesSkipped: 0, sizeBytes: 14 });
    expect(await describeTree(out)).toEqual(await describeTree(src));
  });

  it('leaves no temp files behind', async () => {
    const out = await prepareTarget();
    await restore(repo, snapshotId, { target: out, overwrite: 'always' });
    const names = [...(await readdir(out, { recursive: true }))];
    expect(names.filter((n) => n.includes('.restore-'))).toEqual([]);
  });
});

it('reports restore progress up to the totals', async () => {
  const seen: { filesDone: number; bytesDone: number }[] = [];
  await restore(repo, snapshotId, { target: join(dir, 'out'), overwrite: 'never', onProgress: (p) => seen.push(p) });
  expect(seen.at(-1)).toEqual({ filesDone: 4, filesTotal: 4, bytesDone: 14, bytesTotal: 14 });
});

it('restores many multi-chunk files at once (read-ahead never waits while holding chunks)', async () => {
  const { writeRandomFile } = await import('./testing/fixtures.ts');
  const big = join(dir, 'big');
  await mkdir(big);
  // 12 files x 12 MiB at 8 files in parallel, 8 chunks of read-ahead each: far more than the read budget.
  for (let i = 0; i < 12; i++) await writeRandomFile(join(big, `f${i}`), 12 * 1024 * 1024);
  const { snapshotId: id } = await backup(repo, { source: big, compression: 'none', encryption: true, deduplication: true });
  const out = join(dir, 'out-big');
  const result = await restore(repo, id, { target: out, overwrite: 'never' });
  expect(result.filesRestored).toBe(12);
  expect(await describeTree(out)).toEqual(await describeTree(big));
});

it('a cancelled restore rejects with CANCELLED and leaves no temp file', async () => {
  const { writeRandomFile } = await import('./testing/fixtures.ts');
  const big = join(dir, 'big');
  await mkdir(big);
  for (let i = 0; i < 6; i++) await writeRandomFile(join(big, `f${i}`), 8 * 1024 * 1024);
  const { snapshotId: id } = await backup(repo, { source: big, compression: 'zstd', encryption: true, deduplication: true });
  const out = join(dir, 'out-cancel');
  const controller = new AbortController();
  const err = await restore(repo, id, {
    target: out,
    overwrite: 'never',
    signal: controller.signal,
    onProgress: () => controller.abort(), // the first report comes once the totals are known
  }).catch((e: unknown) => e);
  expect(err).toMatchObject({ code: 'CANCELLED' });
  const names = [...(await readdir(out, { recursive: true }))];
  expect(names.filter((n) => n.includes('.restore-'))).toEqual([]);
  expect(names.length).toBeLessThan(6);
});

it('commits in batches: thousands of files and hundreds of directories restore whole, with modes and times, and no temp file left', async () => {
  // More files than one commit batch holds (2,048) and more finished directories (256): several
  // syncs, renames and directory metadata passes; odd modes need their fchmod.
  const many = join(dir, 'many');
  await mkdir(join(many, 'wide'), { recursive: true });
  for (let i = 0; i < 2060; i++) await writeFile(join(many, 'wide', `f${i}.txt`), `file ${i}\n`);
  for (let i = 0; i < 260; i++) {
    const d = join(many, 'dirs', `d${i}`);
    await mkdir(d, { recursive: true });
    await writeFile(join(d, 'x.txt'), `dir ${i}\n`);
    await chmod(join(d, 'x.txt'), i % 2 ? 0o640 : 0o1777);
    await utimes(d, 1_000_000 + i, 1_000_000 + i);
  }
  await symlink('wide/f1.txt', join(many, 'link'));
  const { snapshotId: id } = await backup(repo, { source: many, compression: 'zstd', encryption: true, deduplication: true });
  const out = join(dir, 'out-many');
  const result = await restore(repo, id, { target: out, overwrite: 'never' });
  expect(result).toMatchObject({ filesRestored: 2321, filesSkipped: 0, warnings: { count: 0, items: [] } });
  expect(await describeTree(out)).toEqual(await describeTree(many));
  expect((await readdir(out, { recursive: true })).filter((f) => f.includes('.restore-'))).toEqual([]);
}, 60_000);

it('never restores set-user-ID or set-group-ID bits: the restored file belongs to the service, not to its original owner', async () => {
  const special = join(dir, 'special');
  await mkdir(special);
  await writeFile(join(special, 'small'), '#!/bin/sh\nid\n');
  await writeFile(join(special, 'large'), randomBytes(6 * 1024 * 1024));
  await chmod(join(special, 'small'), 0o6755);
  await chmod(join(special, 'large'), 0o4750);
  const { snapshotId: id } = await backup(repo, { source: special, compression: 'zstd', encryption: true, deduplication: true });
  const out = join(dir, 'out-special');
  await restore(repo, id, { target: out, overwrite: 'never' });
  expect((await stat(join(out, 'small'))).mode & 0o7777).toBe(0o755);
  expect((await stat(join(out, 'large'))).mode & 0o7777).toBe(0o750);
  expect(await readFile(join(out, 'large'))).toEqual(await readFile(join(special, 'large')));
});

describe('directories made by the writer, in order with their files', () => {
  it('restores a deep tree byte for byte: files before and after each subdirectory, empty files and directories, symlinks and multi-chunk files in made directories', async () => {
    // 6 levels of 3 subdirectories each level down one branch, with files named to fall before
    // ("a…") and after ("z…") the subdirectories in the walk: a directory's files reach the writer
    // in messages before, with and after those that make its subdirectories.
    const deep = join(dir, 'deep');
    let at = deep;
    for (let level = 0; level < 6; level++) {
      await mkdir(at, { recursive: true });
      for (let i = 0; i < 40; i++) await writeFile(join(at, `a${i}.txt`), `${level}/${i}\n`.repeat(1 + (i % 9)));
      for (let i = 0; i < 40; i++) await writeFile(join(at, `z${i}.txt`), randomBytes(100 + i * 37));
      await writeFile(join(at, 'empty'), '');
      await mkdir(join(at, 'k-empty'));
      await symlink('a1.txt', join(at, 'l-link'));
      for (const side of ['m1', 'm2']) {
        await mkdir(join(at, side, 'under'), { recursive: true });
        await writeFile(join(at, side, 'under', 'f.txt'), `${side} ${level}\n`);
        await utimes(join(at, side), 2_000_000 + level, 2_000_000 + level);
      }
      await chmod(join(at, 'm1'), 0o750);
      if (level === 3) await writeFile(join(at, 'big.bin'), randomBytes(5 * 1024 * 1024)); // several chunks: opened by the main thread
      at = join(at, 'm3');
    }
    const { snapshotId: id } = await backup(repo, { source: deep, compression: 'zstd', encryption: true, deduplication: true });
    const out = join(dir, 'out-deep');
    const result = await restore(repo, id, { target: out, overwrite: 'never' });
    expect(result.warnings).toEqual({ count: 0, items: [] });
    expect(result.filesRestored).toBe(6 * (80 + 1 + 1 + 2) + 1);
    expect(await describeTree(out)).toEqual(await describeTree(deep));
    expect((await readdir(out, { recursive: true })).filter((f) => f.includes('.restore-'))).toEqual([]);
  }, 60_000);

  it('a directory that cannot be made is reported once, not each entry under it, and nothing of it is shown', async () => {
    const src2 = join(dir, 'src2');
    await mkdir(join(src2, 'sub', 'inner', 'deeper'), { recursive: true });
    await writeFile(join(src2, 'sub', 'a.txt'), 'a');
    for (let i = 0; i < 5; i++) await writeFile(join(src2, 'sub', 'inner', `x${i}.txt`), `x${i}`);
    await writeFile(join(src2, 'sub', 'inner', 'deeper', 'y.txt'), 'y');
    await writeFile(join(src2, 'top.txt'), 'top');
    const { snapshotId: id } = await backup(repo, { source: src2, compression: 'zstd', encryption: true, deduplication: true });
    const out = join(dir, 'out-gone');
    const result = await restore(repo, id, {
      target: out,
      overwrite: 'never',
      beforeCreate: async (path, type) => {
        // The directory made for `sub` is removed before `sub/inner` is made in it.
        if (type === 'directory' && Buffer.from(path).toString() === 'sub/inner') {
          const hidden = (await readdir(out)).filter((n) => n.startsWith('.restore-'));
          expect(hidden).toHaveLength(1);
          await rm(join(out, hidden[0]!), { recursive: true });
        }
      },
    });
    const reported = result.warnings.items.map((w) => Buffer.from(w.path).toString());
    expect(reported).toContain('sub/inner');
    expect(reported.filter((p) => p.startsWith('sub/inner/'))).toEqual([]);
    expect(await describeTree(out)).toEqual({ 'top.txt': (await describeTree(src2))['top.txt'] });
    expect(result.filesRestored).toBe(1);
  });
});

describe('small files whose pack a prune moves during the restore', () => {
  it('reads each blob where it is now and writes the files whole', async () => {
    const base = join(dir, 'moved');
    const { repo: r, dir: repoDir, key, reopen } = await openTestRepo(base);
    const keep = join(base, 'keep');
    await mkdir(join(keep, 'd', 'e'), { recursive: true });
    for (let i = 0; i < 40; i++) await writeFile(join(keep, 'd', i % 2 ? 'e' : '', `f${i}.txt`), `small file ${i} `.repeat(10 + i));
    // Unreferenced once their snapshot is forgotten: the pack they share with the kept files is rewritten by the prune.
    const both = join(base, 'both');
    await cp(keep, join(both, 'keep'), { recursive: true });
    for (let i = 0; i < 40; i++) await writeFile(join(both, `gone${i}.bin`), randomBytes(20_000));
    const opts = { compression: 'zstd', encryption: true, deduplication: true } as const;
    const first = await backup(r, { source: both, ...opts });
    const kept = await backup(r, { source: keep, ...opts });
    await forget(r, first.snapshotId);
    // Opened (its index loaded) before the prune; the prune runs just before its first read of a data pack.
    const gated = new GatedBackend(new LocalBackend(repoDir));
    const reader = await RepositoryClass.open(gated, key);
    let pruned = 0;
    gated.beforeRangedLoad('data/', async () => {
      const p = await prune(await reopen(), { repackThreshold: 0.01 });
      pruned = p.packsRepacked + p.packsDeleted;
    });
    const out = join(base, 'out');
    const result = await restore(reader, kept.snapshotId, { target: out, overwrite: 'never' });
    expect(pruned).toBeGreaterThan(0);
    expect(result.filesRestored).toBe(40);
    expect(await describeTree(out)).toEqual(await describeTree(keep));
    await reader.close();
    await r.close();
  }, 60_000);
});

import { chmod, link, mkdir, readFile, readdir, rename, rm, stat, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backup, listEntries, restore } from './index.ts';
import type { Repository } from './index.ts';
import { allFiles, describeTree, tempDir } from './testing/fixtures.ts';
import { b, openTestRepo, t } from './testing/repo.ts';

/**
 * The filesystem changes under a running job; confinement must hold anyway. Each swap is made
 * by the engine's test hooks at a precise step (after the walk saw an entry, before it is
 * opened; before a restore creates an entry), on real files.
 */
let dir: string;
let cleanup: () => Promise<void>;
let repo: Repository;
let src: string;
let outside: string;
const SECRET = 'OUTSIDE-SECRET-5f1e2d';
// Stored in the clear, so a scan of the repository's bytes shows whether the secret got in.
const plain = { compression: 'none', encryption: false, deduplication: true } as const;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-confine-'));
  ({ repo } = await openTestRepo(dir));
  src = join(dir, 'src');
  outside = join(dir, 'outside');
  await mkdir(join(src, 'sub'), { recursive: true });
  await mkdir(outside);
  await writeFile(join(outside, 'secret.txt'), `${SECRET}\n`.repeat(10));
  await writeFile(join(outside, 'big.bin'), `${SECRET}\n`.repeat(100_000)); // streamed, not read whole by a worker
  await writeFile(join(outside, 'f2.txt'), `${SECRET}\n`);
  await writeFile(join(src, 'victim.txt'), 'small victim\n');
  await writeFile(join(src, 'victim.bin'), 'large victim\n'.repeat(100_000));
  await writeFile(join(src, 'sub', 'f1.txt'), 'one\n');
  await writeFile(join(src, 'sub', 'f2.txt'), 'two\n');
});
afterEach(async () => {
  await repo.close();
  await cleanup();
});

async function repositoryHolds(needle: string): Promise<boolean> {
  for (const f of await allFiles(join(dir, 'repo'))) if ((await readFile(f)).includes(needle)) return true;
  return false;
}

async function listed(snapshotId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of listEntries(repo, snapshotId)) out.push(t(e.path));
  return out;
}

describe('backup', () => {
  it('never reads through a file replaced by a symlink to an outside file after the walk saw it', async () => {
    const result = await backup(repo, {
      source: src,
      ...plain,
      beforeOpen: async (path) => {
        const name = t(path);
        if (name === 'victim.txt' || name === 'victim.bin') {
          await unlink(join(src, name));
          await symlink(join(outside, name === 'victim.txt' ? 'secret.txt' : 'big.bin'), join(src, name));
        }
      },
    });
    expect(result.warnings.count).toBe(2);
    expect(result.warnings.items.map((w) => [t(w.path), w.reason]).sort()).toEqual([
      ['victim.bin', 'replaced during the backup (a symlink or another type now): not followed'],
      ['victim.txt', 'replaced during the backup (a symlink or another type now): not followed'],
    ]);
    expect(await listed(result.snapshotId)).toEqual(['sub', 'sub/f1.txt', 'sub/f2.txt']);
    expect(await repositoryHolds(SECRET)).toBe(false);
    expect(await repositoryHolds('one\n')).toBe(true); // the scan would see stored content
  });

  it('never reads another file swapped in under the same name: a hard link to an outside file (device and inode are checked)', async () => {
    const result = await backup(repo, {
      source: src,
      ...plain,
      beforeOpen: async (path) => {
        if (t(path) === 'victim.txt') {
          await unlink(join(src, 'victim.txt'));
          await link(join(outside, 'secret.txt'), join(src, 'victim.txt')); // a regular file, but another inode
        }
      },
    });
    expect(result.warnings.items.map((w) => [t(w.path), w.reason])).toEqual([['victim.txt', 'replaced during the backup by another file: not read']]);
    expect(await repositoryHolds(SECRET)).toBe(false);
  });

  it('never enters a directory swapped for a symlink to an outside directory between walk and read', async () => {
    const result = await backup(repo, {
      source: src,
      ...plain,
      beforeOpen: async (path, type) => {
        if (type === 'directory' && t(path) === 'sub') {
          await rename(join(src, 'sub'), join(dir, 'sub-moved'));
          await symlink(outside, join(src, 'sub'));
        }
      },
    });
    expect(result.warnings.items.map((w) => [t(w.path), w.reason])).toEqual([['sub', 'replaced during the backup (a symlink or another type now): not followed']]);
    expect(await listed(result.snapshotId)).toEqual(['victim.bin', 'victim.txt']);
    expect(await repositoryHolds(SECRET)).toBe(false);
  });

  it('keeps reading a directory it opened through its handle when the path is swapped for a symlink meanwhile', async () => {
    const result = await backup(repo, {
      source: src,
      ...plain,
      beforeOpen: async (path) => {
        if (t(path) === 'sub/f1.txt') {
          await rename(join(src, 'sub'), join(dir, 'sub-moved'));
          await symlink(outside, join(src, 'sub')); // outside holds an f2.txt too
        }
      },
    });
    expect(result.warnings.count).toBe(0);
    expect(await listed(result.snapshotId)).toEqual(['sub', 'sub/f1.txt', 'sub/f2.txt', 'victim.bin', 'victim.txt']);
    expect(await repositoryHolds(SECRET)).toBe(false);
    expect(await repositoryHolds('two\n')).toBe(true); // the real f2.txt, read through the handle
  });
});

describe('restore', () => {
  let snapshotId: string;
  let outsideBefore: Awaited<ReturnType<typeof describeTree>>;

  beforeEach(async () => {
    await rm(join(src, 'sub'), { recursive: true });
    await mkdir(join(src, 'sub'));
    for (let i = 0; i < 20; i++) await writeFile(join(src, 'sub', `file${String(i).padStart(2, '0')}.txt`), `content ${i}\n`);
    await chmod(join(src, 'sub'), 0o750);
    ({ snapshotId } = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true }));
    await chmod(outside, 0o755);
    await utimes(outside, new Date('2001-01-01T00:00:00Z'), new Date('2001-01-01T00:00:00Z'));
    outsideBefore = await describeTree(outside);
  });

  /** Restores everything into `target`; once the restore is inside `sub`, `swap` replaces it. */
  function restoreSwapping(target: string, swap: () => Promise<void>): ReturnType<typeof restore> {
    let swapped = false;
    return restore(repo, snapshotId, {
      target,
      overwrite: 'always',
      beforeCreate: async (path) => {
        if (!swapped && t(path).startsWith('sub/')) {
          swapped = true;
          await swap();
        }
      },
    });
  }

  async function outsideUntouched(): Promise<void> {
    expect(await describeTree(outside)).toEqual(outsideBefore);
    const st = await stat(outside);
    expect(st.mode & 0o7777).toBe(0o755);
    expect(st.mtime.toISOString()).toBe('2001-01-01T00:00:00.000Z');
  }

  /** The directory the restore made for `sub`: hidden under a temp name until its files are durable. */
  async function made(target: string): Promise<string> {
    const hidden = (await readdir(target)).filter((n) => n.startsWith('.restore-'));
    expect(hidden).toHaveLength(1);
    return join(target, hidden[0]!);
  }

  it('writes nothing (and chmods nothing) outside when a directory it created is moved away and replaced by a symlink, and never moves the symlink into place', async () => {
    const target = join(dir, 'target');
    const result = await restoreSwapping(target, async () => {
      const sub = await made(target);
      await rename(sub, join(dir, 'sub-moved'));
      await symlink(outside, sub);
    });
    await outsideUntouched();
    // Every file went into the directory the restore created, wherever it now is.
    expect((await readdir(join(dir, 'sub-moved'))).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `file${String(i).padStart(2, '0')}.txt`));
    expect((await stat(join(dir, 'sub-moved'))).mode & 0o7777).toBe(0o750);
    // What was swapped in under its temp name is not shown as `sub`: the directory is a warning, its files not restored.
    expect(await readdir(target)).not.toContain('sub');
    expect(result).toMatchObject({ filesRestored: 2, warnings: { count: 1 } });
    expect(t(result.warnings.items[0]!.path)).toBe('sub');
  });

  it('writes nothing outside when a directory it created is deleted and replaced by a symlink: each file is a warning', async () => {
    const target = join(dir, 'target');
    const result = await restoreSwapping(target, async () => {
      const sub = await made(target);
      await rm(sub, { recursive: true });
      await symlink(outside, sub);
    });
    await outsideUntouched();
    expect(result.filesRestored).toBe(2);
    expect(result.warnings.count).toBeGreaterThanOrEqual(20);
    expect(result.warnings.items.filter((w) => t(w.path).startsWith('sub/file'))).toHaveLength(20);
    expect(await readFile(join(target, 'victim.txt'), 'utf8')).toBe('small victim\n');
  });

  it('does not enter a directory swapped for a symlink before it is created', async () => {
    const target = join(dir, 'target');
    await mkdir(target);
    const result = await restore(repo, snapshotId, {
      target,
      paths: [b('sub')],
      overwrite: 'always',
      beforeCreate: async (path, type) => {
        if (type === 'directory' && t(path) === 'sub') await symlink(outside, join(target, 'sub'));
      },
    }).catch((err: unknown) => err);
    expect(result).toMatchObject({ code: 'RESTORE_CONFLICT' });
    await outsideUntouched();
  });
});

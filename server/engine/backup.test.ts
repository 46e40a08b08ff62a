import { unlinkSync } from 'node:fs';
import { chmod, mkdir, readFile, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngineError, backup, listEntries, restore, verify } from './index.ts';
import type { EntryRecord, Progress, Repository } from './index.ts';
import { allFiles, describeTree, sha256Of, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { b, openTestRepo, t } from './testing/repo.ts';
import { newMasterKey } from './crypto.ts';
import { Repository as RepositoryClass } from './repository.ts';
import { bufferedObject, type ObjectWriter } from './storage/backend.ts';
import { LOCAL_PACKING, LocalBackend } from './storage/local.ts';

let dir: string;
let cleanup: () => Promise<void>;
let repo: Repository;
const opts = { compression: 'zstd', encryption: true, deduplication: true } as const;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
  ({ repo } = await openTestRepo(dir));
});
afterEach(async () => {
  await repo.close();
  await cleanup();
});

async function makeTree(root: string): Promise<void> {
  await mkdir(join(root, 'docs/deep/er'), { recursive: true });
  await mkdir(join(root, 'empty-dir'));
  await writeFile(join(root, 'hello.txt'), 'hello world\n');
  await writeFile(join(root, 'empty'), '');
  await writeFile(join(root, 'docs/readme.md'), '# readme\n'.repeat(1000));
  await writeFile(join(root, 'docs/deep/er/ünïcødé 文件 🚀.txt'), 'unicode name');
  await writeRandomFile(join(root, 'docs/random.bin'), 3 * 1024 * 1024 + 17);
  await writeFile(join(root, 'script.sh'), '#!/bin/sh\necho hi\n');
  await chmod(join(root, 'script.sh'), 0o755);
  await writeFile(join(root, 'secret'), 'private');
  await chmod(join(root, 'secret'), 0o600);
  await chmod(join(root, 'empty-dir'), 0o700);
  await symlink('hello.txt', join(root, 'link-to-file'));
  await symlink('../../../../etc/passwd', join(root, 'docs/deep/escaping-link'));
  await symlink('does-not-exist', join(root, 'dangling'));
  await utimes(join(root, 'hello.txt'), new Date('2001-02-03T04:05:06.789Z'), new Date('2001-02-03T04:05:06.789Z'));
  await utimes(join(root, 'docs/deep'), new Date('2010-01-01T00:00:00Z'), new Date('2010-01-01T00:00:00Z'));
}

describe('backup and restore round trip', () => {
  it('restores files, directories, symlinks, empty files, modes, mtimes and unicode names exactly', async () => {
    const src = join(dir, 'src');
    await makeTree(src);
    const before = await describeTree(src);
    const seen: Progress[] = [];
    const listed: EntryRecord[] = [];
    const result = await backup(repo, { source: src, ...opts, onProgress: (p) => seen.push(p), onEntries: (batch) => void listed.push(...batch) });
    expect(result.warnings).toEqual({ count: 0, items: [] });
    expect(result.files).toBe(7 + 3); // regular files and symlinks
    expect(result.directories).toBe(4);
    expect(result.files + result.directories).toBe(Object.keys(before).length);
    expect(listed.map((e) => t(e.path)).sort()).toEqual(Object.keys(before).sort());
    expect(result.sizeBytes).toBe(12 + 0 + 9000 + 12 + 3 * 1024 * 1024 + 17 + 18 + 7);
    expect(result.storedBytes).toBeGreaterThan(3 * 1024 * 1024);
    const last = seen.at(-1)!;
    expect(last).toEqual({ filesDone: 7, filesTotal: 7, bytesDone: result.sizeBytes, bytesTotal: result.sizeBytes });

    const out = join(dir, 'out');
    const restored = await restore(repo, result.snapshotId, { target: out, overwrite: 'never' });
    expect(restored).toEqual({ filesRestored: 10, filesSkipped: 0, sizeBytes: result.sizeBytes, warnings: { count: 0, items: [] } });
    expect(await describeTree(out)).toEqual(before);
    expect(before['docs/deep/escaping-link']).toEqual({ type: 'symlink', mode: 0, link: '../../../../etc/passwd' });
  });

  it('lists every entry with type, size, mode, mtime and sha256', async () => {
    const src = join(dir, 'src');
    await makeTree(src);
    const { snapshotId } = await backup(repo, { source: src, ...opts });
    const entries: EntryRecord[] = [];
    for await (const e of listEntries(repo, snapshotId)) entries.push(e);
    const byPath = new Map(entries.map((e) => [t(e.path), e]));
    expect(byPath.get('hello.txt')).toEqual({
      path: b('hello.txt'),
      type: 'file',
      size: 12,
      mode: 0o644,
      mtime: new Date('2001-02-03T04:05:06.789Z'),
      sha256: await sha256Of(join(src, 'hello.txt')),
    });
    expect(byPath.get('link-to-file')).toMatchObject({ type: 'symlink', linkTarget: b('hello.txt'), sha256: null });
    expect(byPath.get('empty-dir')).toMatchObject({ type: 'directory', mode: 0o700 });
    expect(byPath.get('docs/deep/er/ünïcødé 文件 🚀.txt')?.sha256).toBe(await sha256Of(join(src, 'docs/deep/er/ünïcødé 文件 🚀.txt')));
    expect(entries.map((e) => t(e.path))).toContain('docs/deep/er');
    // Depth first, each directory's entries in name order.
    expect(entries.map((e) => t(e.path)).slice(0, 4)).toEqual(['dangling', 'docs', 'docs/deep', 'docs/deep/er']);
  });

  it('round-trips a 110 MiB file, streamed, with every compression', async () => {
    const src = join(dir, 'src');
    await mkdir(src);
    await writeRandomFile(join(src, 'big.bin'), 110 * 1024 * 1024 + 12345);
    const sum = await sha256Of(join(src, 'big.bin'));
    const result = await backup(repo, { source: src, ...opts });
    expect(result.sizeBytes).toBe(110 * 1024 * 1024 + 12345);
    const entries: EntryRecord[] = [];
    for await (const e of listEntries(repo, result.snapshotId)) entries.push(e);
    expect(entries[0]!.sha256).toBe(sum);
    await restore(repo, result.snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
    expect(await sha256Of(join(dir, 'out/big.bin'))).toBe(sum);
  });

  it("holds no more packs being saved than the backend's packing budget allows", async () => {
    const MiB = 1024 * 1024;
    /** Saves packs whole, as an object store does; data packs take a second each to save; counts the bytes being saved at once. */
    class SlowSaves extends LocalBackend {
      override create(): ObjectWriter {
        return bufferedObject((name, parts) => this.save(name, parts));
      }
      saving = 0;
      mostSaving = 0;
      override async save(name: string, parts: readonly Uint8Array[], options?: { ifAbsent?: boolean }): Promise<boolean> {
        const bytes = name.startsWith('data/') ? parts.reduce((n, p) => n + p.length, 0) : 0;
        this.saving += bytes;
        this.mostSaving = Math.max(this.mostSaving, this.saving);
        try {
          if (bytes > 0) await new Promise((resolve) => setTimeout(resolve, 1000));
          return await super.save(name, parts, options);
        } finally {
          this.saving -= bytes;
        }
      }
    }
    const src = join(dir, 'src');
    await mkdir(src);
    await writeRandomFile(join(src, 'big.bin'), 100 * MiB);
    const backend = new SlowSaves(join(dir, 'slow-repo'), { packing: { dataPackBytes: 16 * MiB, unwrittenBytes: 24 * MiB } });
    const slow = await RepositoryClass.open(backend, newMasterKey());
    try {
      const result = await backup(slow, { source: src, ...opts });
      expect(result.sizeBytes).toBe(100 * MiB);
    } finally {
      await slow.close();
    }
    // 16 MiB data packs: the budget (raised to a pack, a tree pack and two blobs: 30 MiB; plus blobs
    // already sent to the workers) leaves room for two being saved at once, never three (64 MiB lets four).
    expect(backend.mostSaving).toBeGreaterThan(16 * MiB);
    expect(backend.mostSaving).toBeLessThan(3 * 16 * MiB);
  });

  it('writes packs to a local directory as they fill: holds a slab per pack and the writes under way, not whole packs', async () => {
    const MiB = 1024 * 1024;
    /** Counts the bytes handed to pack writers whose writes have not finished. */
    class Counting extends LocalBackend {
      held = 0;
      mostHeld = 0;
      committed = 0;
      override create(): ObjectWriter {
        const inner = super.create();
        return {
          write: async (part) => {
            this.held += part.length;
            this.mostHeld = Math.max(this.mostHeld, this.held);
            try {
              await inner.write(part);
            } finally {
              this.held -= part.length;
            }
          },
          commit: async (name) => {
            await inner.commit(name);
            this.committed++;
          },
          abort: () => inner.abort(),
        };
      }
    }
    const src = join(dir, 'src');
    await mkdir(src);
    await writeRandomFile(join(src, 'big.bin'), 100 * MiB);
    const backend = new Counting(join(dir, 'counting-repo'), { packing: { ...LOCAL_PACKING, dataPackBytes: 32 * MiB } });
    const counted = await RepositoryClass.open(backend, newMasterKey());
    try {
      const { snapshotId } = await backup(counted, { source: src, ...opts });
      expect(backend.committed).toBeGreaterThanOrEqual(4); // 100 MiB in 32 MiB data packs, and a tree pack
      // A pack kept whole would be 32 MiB; the budget of writes under way (8 MiB) plus blobs arriving from the workers (8 MiB) is less.
      expect(backend.mostHeld).toBeLessThan(24 * MiB); // less than one pack (main held up to 32 MiB of packs)
      await restore(counted, snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
      expect(await sha256Of(join(dir, 'out', 'big.bin'))).toBe(await sha256Of(join(src, 'big.bin')));
    } finally {
      await counted.close();
    }
    expect((await allFiles(join(dir, 'counting-repo'))).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('round-trips with gzip, none, and no encryption', async () => {
    const src = join(dir, 'src');
    await makeTree(src);
    const before = await describeTree(src);
    for (const variant of [
      { compression: 'gzip', encryption: true, deduplication: true },
      { compression: 'none', encryption: false, deduplication: false },
      { compression: 'zstd', compressionLevel: 19, encryption: false, deduplication: true },
    ] as const) {
      const { snapshotId } = await backup(repo, { source: src, ...variant });
      const out = join(dir, `out-${variant.compression}`);
      await restore(repo, snapshotId, { target: out, overwrite: 'never' });
      expect(await describeTree(out)).toEqual(before);
    }
  });

  it('reports a file that vanished before it was read as a warning and backs up the rest', async () => {
    const src = join(dir, 'src');
    await makeTree(src);
    const result = await backup(repo, {
      source: src,
      ...opts,
      // Listed, then removed before it is opened.
      beforeOpen: (path) => {
        if (t(path) === 'secret') unlinkSync(join(src, 'secret'));
      },
    });
    expect(result.warnings).toEqual({ count: 1, items: [{ path: b('secret'), reason: 'vanished during the backup' }] });
    expect(result.files).toBe(9);
    const paths: string[] = [];
    for await (const e of listEntries(repo, result.snapshotId)) paths.push(t(e.path));
    expect(paths).not.toContain('secret');
    expect(paths).toContain('hello.txt');
  });

  it('rejects a missing source with SOURCE_NOT_FOUND', async () => {
    const err = await backup(repo, { source: join(dir, 'nope'), ...opts }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'SOURCE_NOT_FOUND', details: { path: join(dir, 'nope') } });
  });

  it('backs up a single file given as the source', async () => {
    await writeFile(join(dir, 'one.txt'), 'just me');
    const { snapshotId, files, directories } = await backup(repo, { source: join(dir, 'one.txt'), ...opts });
    expect([files, directories]).toEqual([1, 0]);
    await restore(repo, snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
    expect(await readFile(join(dir, 'out/one.txt'), 'utf8')).toBe('just me');
  });
});

describe('cancellation', () => {
  it('rejects with CANCELLED and writes no snapshot', async () => {
    const src = join(dir, 'src');
    await mkdir(src);
    for (let i = 0; i < 6; i++) await writeRandomFile(join(src, `f${i}`), 8 * 1024 * 1024);
    const controller = new AbortController();
    const err = await backup(repo, {
      source: src,
      ...opts,
      signal: controller.signal,
      onProgress: (p) => {
        if (p.bytesDone > 10 * 1024 * 1024) controller.abort();
      },
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'CANCELLED' });
    expect(await repo.snapshots()).toEqual([]);
    expect((await allFiles(join(dir, 'repo'))).filter((f) => f.includes('.tmp-'))).toEqual([]);
    // What was written is whole: the repository still verifies.
    expect((await verify(repo)).errors).toEqual([]);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(backup(repo, { source: dir, ...opts, signal: controller.signal })).rejects.toMatchObject({ code: 'CANCELLED' });
  });

});

describe('progress', () => {
  it('reports progress totals from the counting scan while the backup is still running, and restore totals likewise', async () => {
    const src = join(dir, 'src');
    await mkdir(join(src, 'd'), { recursive: true });
    for (let i = 0; i < 50; i++) await writeFile(join(src, 'd', `f${i}`), 'x'.repeat(i + 1));
    const bytes = (50 * 51) / 2;
    let totalsSeen!: () => void;
    const known = new Promise<void>((resolve) => (totalsSeen = resolve));
    const reports: { filesDone: number; filesTotal: number; bytesTotal: number }[] = [];
    const onProgress = (p: (typeof reports)[number]): void => {
      reports.push(p);
      if (p.filesTotal > 0) totalsSeen();
    };
    // The first file waits for the totals: they must come from the scan beside the backup, not from its end.
    const held = (): Promise<void> => Promise.race([known, new Promise<void>((resolve) => setTimeout(resolve, 5000))]);
    const { snapshotId } = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true, onProgress, beforeOpen: held });
    expect(reports[0]).toEqual({ filesDone: 0, filesTotal: 0, bytesDone: 0, bytesTotal: 0 });
    expect(reports).toContainEqual({ filesDone: 0, filesTotal: 50, bytesDone: 0, bytesTotal: bytes });

    reports.length = 0;
    const restoreKnown = new Promise<void>((resolve) => (totalsSeen = resolve));
    await restore(repo, snapshotId, {
      target: join(dir, 'out'),
      overwrite: 'never',
      onProgress,
      beforeCreate: () => Promise.race([restoreKnown, new Promise<void>((resolve) => setTimeout(resolve, 5000))]),
    });
    expect(reports).toContainEqual({ filesDone: 0, filesTotal: 50, bytesDone: 0, bytesTotal: bytes });
    expect(reports.at(-1)).toEqual({ filesDone: 50, filesTotal: 50, bytesDone: bytes, bytesTotal: bytes });
  });
});

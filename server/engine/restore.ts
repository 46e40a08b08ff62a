import { createHash, randomBytes } from 'node:crypto';
import { closeSync, createReadStream, fchmodSync, fsync, futimesSync, openSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import type { Stats } from 'node:fs';
import { chmod, lstat, lutimes, mkdir, open, rename, symlink, unlink, utimes } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { ChunkReader } from './chunk-reader.ts';
import { EngineError, cancelled, errnoCode, throwIfAborted } from './errors.ts';
import { ProgressReporter } from './progress.ts';
import { releasePrivate } from './release.ts';
import type { Repository } from './repository.ts';
import type { TreeEntry } from './snapshot.ts';
import type { Overwrite, Progress } from './types.ts';

export interface RestoreOptions {
  target: string;
  paths?: string[];
  overwrite: Overwrite;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
}

export interface RestoreResult {
  filesRestored: number;
  filesSkipped: number;
  sizeBytes: number;
}

const FILE_CONCURRENCY = 8;
const fsyncFd = promisify(fsync);
/** Chunks of one file fetched ahead of the one being written. */
const READ_AHEAD = 8;
const SYNC_EVERY = 64 * 1024 * 1024;


function safePath(p: string): boolean {
  return p.length > 0 && !p.startsWith('/') && p.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

export function selectEntries(tree: TreeEntry[], paths: string[] | undefined): TreeEntry[] {
  if (!paths || paths.length === 0) return tree;
  const wanted = paths.map((p) => p.replace(/^\.\/+/, '').replace(/\/+$/, ''));
  const matched = new Set<string>();
  const out = tree.filter((e) =>
    wanted.some((w) => {
      const hit = w === '' || w === '.' || e.p === w || e.p.startsWith(`${w}/`);
      if (hit) matched.add(w);
      return hit;
    }),
  );
  const missing = wanted.filter((w) => !matched.has(w));
  if (missing.length > 0) throw new EngineError('PATH_NOT_FOUND', `not in the snapshot: ${missing.join(', ')}`, { paths: missing });
  return out;
}

async function lstatOrNull(p: string): Promise<Stats | null> {
  try {
    return await lstat(p);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw err;
  }
}

async function sha256File(p: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(p, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function mtimeSeconds(e: TreeEntry): number {
  return Number(BigInt(e.mt) / 1000n) / 1e6;
}

function tempName(dest: string): string {
  return join(dirname(dest), `.${basename(dest)}.restore-${randomBytes(6).toString('hex')}`);
}

export async function restore(repo: Repository, snapshotId: string, opts: RestoreOptions): Promise<RestoreResult> {
  repo.assertOpen();
  const { signal } = opts;
  throwIfAborted(signal);
  const tree = await repo.tree(snapshotId);
  const selected = selectEntries(tree, opts.paths);
  for (const e of selected) {
    if (!safePath(e.p)) throw new EngineError('CORRUPT_DATA', `snapshot holds an unsafe path ${JSON.stringify(e.p)}`, { path: e.p });
  }
  const target = resolve(opts.target);
  const targetExisted = (await lstatOrNull(target)) !== null;
  await mkdir(target, { recursive: true });
  const files = selected.filter((e) => e.t === 'f');
  const progress = new ProgressReporter(opts.onProgress, {
    filesDone: 0,
    filesTotal: files.length,
    bytesDone: 0,
    bytesTotal: files.reduce((n, e) => n + e.s, 0),
  });
  progress.emit();
  const reader = new ChunkReader(repo);
  const result: RestoreResult = { filesRestored: 0, filesSkipped: 0, sizeBytes: 0 };
  let failed: unknown = null;

  const writeFile = async (e: TreeEntry, dest: string): Promise<void> => {
    const temp = tempName(dest);
    const fh = await open(temp, 'wx', 0o600);
    const ids = e.c ?? [];
    const fetches: (Promise<Uint8Array> | undefined)[] = [];
    const sizes: number[] = [];
    const writes: Promise<void>[] = [];
    let next = 0;
    /**
     * Starts fetching the next chunk. Read-ahead only takes budget that is free now: a file
     * that waited for budget while holding fetched chunks could deadlock with the others
     * doing the same. It waits only when it holds nothing in flight.
     */
    const startFetch = async (wait: boolean): Promise<boolean> => {
      const loc = await reader.locate(ids[next]!);
      if (wait) await reader.budget.acquire(loc.rawLength);
      else if (!reader.budget.tryAcquire(loc.rawLength)) return false;
      next++;
      sizes.push(loc.rawLength);
      const p = reader.read(loc);
      p.catch(() => {});
      fetches.push(p);
      return true;
    };
    let consumed = 0;
    let syncing: Promise<void> | null = null;
    let sinceSync = 0;
    try {
      if (ids.length > 0) await startFetch(true);
      while (next < ids.length && next < READ_AHEAD && (await startFetch(false)));
      let position = 0;
      while (consumed < ids.length) {
        if (failed || signal?.aborted) throw failed ?? cancelled();
        let data: Uint8Array;
        try {
          data = await fetches[consumed]!;
          fetches[consumed] = undefined; // written chunks are not kept alive
        } catch (err) {
          if (err instanceof EngineError && err.code === 'CORRUPT_DATA') {
            throw new EngineError('CORRUPT_DATA', `${e.p}: ${err.message}`, { ...err.details, path: e.p });
          }
          throw err;
        }
        // Writes go out at their offsets without waiting for each other; the budget is returned as each lands.
        const size = sizes[consumed]!;
        const at = position;
        const write = (async () => {
          try {
            for (let off = 0; off < data.length; ) off += (await fh.write(data, off, data.length - off, at + off)).bytesWritten;
          } finally {
            releasePrivate(data); // transferred from a worker: private
            reader.budget.release(size);
          }
        })();
        write.catch(() => {});
        writes.push(write);
        position += data.length;
        consumed++;
        progress.add(0, data.length);
        // A large file is flushed as it goes, so the final fsync does not wait for all of it.
        sinceSync += data.length;
        if (sinceSync >= SYNC_EVERY && !syncing) {
          sinceSync = 0;
          const pending = [...writes];
          syncing = Promise.all(pending)
            .then(() => fh.datasync())
            .finally(() => {
              syncing = null;
            });
          syncing.catch(() => {});
        }
        if (next === consumed && next < ids.length) await startFetch(true);
        while (next < ids.length && next - consumed < READ_AHEAD && (await startFetch(false)));
      }
      await Promise.all(writes);
      await syncing;
      await fh.chmod(e.m & 0o7777);
      await fh.utimes(mtimeSeconds(e), mtimeSeconds(e));
      await fh.sync();
      await fh.close();
      await rename(temp, dest);
    } catch (err) {
      await Promise.allSettled(writes);
      await syncing?.catch(() => {});
      await fh.close().catch(() => {});
      await unlink(temp).catch(() => {});
      for (let i = consumed; i < fetches.length; i++) {
        await fetches[i]?.catch(() => {});
        reader.budget.release(sizes[i]!);
      }
      throw err;
    }
  };

  /**
   * A file of at most one chunk (most files of a source tree): created, written and given
   * its mode and times with synchronous calls (a thread-pool round trip each would cost more
   * than the call), fsynced asynchronously, then renamed into place.
   */
  const writeSmallFile = async (e: TreeEntry, dest: string): Promise<void> => {
    let data: Uint8Array = new Uint8Array(0);
    let held = 0;
    try {
      const id = e.c?.[0];
      if (id !== undefined) {
        const loc = await reader.locate(id);
        await reader.budget.acquire(loc.rawLength);
        held = loc.rawLength;
        try {
          data = await reader.read(loc);
        } catch (err) {
          if (err instanceof EngineError && err.code === 'CORRUPT_DATA') {
            throw new EngineError('CORRUPT_DATA', `${e.p}: ${err.message}`, { ...err.details, path: e.p });
          }
          throw err;
        }
      }
      if (failed || signal?.aborted) throw failed ?? cancelled();
      const temp = tempName(dest);
      let fd = openSync(temp, 'wx', 0o600);
      try {
        for (let off = 0; off < data.length; ) off += writeSync(fd, data, off, data.length - off, off);
        fchmodSync(fd, e.m & 0o7777);
        futimesSync(fd, mtimeSeconds(e), mtimeSeconds(e));
        await fsyncFd(fd);
        closeSync(fd);
        fd = -1;
        await rename(temp, dest);
      } catch (err) {
        if (fd >= 0) closeSync(fd);
        await unlink(temp).catch(() => {});
        throw err;
      }
      progress.add(0, data.length);
    } finally {
      if (data.length > 0) releasePrivate(data);
      if (held > 0) reader.budget.release(held);
    }
  };

  /** Directories known to exist, and those this restore created (nothing inside them can pre-exist). */
  const ensured = new Set<string>();
  const created = new Set<string>();
  ensured.add(target);
  if (!targetExisted) created.add(target);
  /**
   * Makes sure a directory below the target exists, one component at a time from the target
   * down: an existing component must be a real directory (lstat), never a symlink, so nothing
   * is written through a link planted in the target. Memoized, so concurrent files share it.
   */
  const pendingDirs = new Map<string, Promise<void>>();
  const ensureDir = (dir: string): Promise<void> => {
    if (ensured.has(dir)) return Promise.resolve();
    let pending = pendingDirs.get(dir);
    if (!pending) {
      pending = (async () => {
        const parent = dirname(dir);
        if (parent === dir) throw new EngineError('INTERNAL_ERROR', 'restore path outside its target', {});
        await ensureDir(parent);
        const existing = created.has(parent) ? null : await lstatOrNull(dir);
        if (!existing) {
          await mkdir(dir);
          created.add(dir);
        } else if (!existing.isDirectory()) {
          const rel = relative(target, dir).split(sep).join('/');
          throw new EngineError('RESTORE_CONFLICT', `${rel} exists and is not a directory`, { path: rel });
        }
        ensured.add(dir);
      })();
      pendingDirs.set(dir, pending);
    }
    return pending;
  };
  const ensureParent = (dest: string): Promise<void> => ensureDir(dirname(dest));

  const restoreEntry = async (e: TreeEntry): Promise<void> => {
    const dest = join(target, ...e.p.split('/'));
    await ensureParent(dest);
    const existing = created.has(dirname(dest)) ? null : await lstatOrNull(dest);
    if (e.t === 'l') {
      if (existing && opts.overwrite === 'never') return;
      if (existing?.isDirectory()) throw new EngineError('RESTORE_CONFLICT', `${e.p} exists as a directory`, { path: e.p });
      const temp = tempName(dest);
      await symlink(e.l ?? '', temp);
      await lutimes(temp, mtimeSeconds(e), mtimeSeconds(e)).catch(() => {});
      await rename(temp, dest);
      return;
    }
    if (existing) {
      const same = opts.overwrite === 'if_changed' && existing.isFile() && existing.size === e.s && (await sha256File(dest)) === e.h;
      if (opts.overwrite === 'never' || same) {
        result.filesSkipped++;
        progress.add(1, e.s);
        return;
      }
      if (existing.isDirectory()) throw new EngineError('RESTORE_CONFLICT', `${e.p} exists as a directory`, { path: e.p });
    }
    if ((e.c?.length ?? 0) <= 1) await writeSmallFile(e, dest);
    else await writeFile(e, dest);
    result.filesRestored++;
    result.sizeBytes += e.s;
    progress.add(1, 0);
  };

  try {
    for (const e of selected) {
      if (e.t !== 'd') continue;
      const dest = join(target, ...e.p.split('/'));
      const existing = created.has(dirname(dest)) ? null : await lstatOrNull(dest);
      if (existing && !existing.isDirectory()) throw new EngineError('RESTORE_CONFLICT', `${e.p} exists and is not a directory`, { path: e.p });
      if (!existing) {
        await ensureParent(dest);
        await mkdir(dest, { mode: 0o700 });
        created.add(dest);
      }
      ensured.add(dest);
    }
    const others = selected.filter((e) => e.t !== 'd');
    let next = 0;
    const runner = async (): Promise<void> => {
      while (next < others.length && !failed) {
        throwIfAborted(signal);
        const e = others[next++]!;
        try {
          await restoreEntry(e);
        } catch (err) {
          failed ??= err;
        }
      }
    };
    await Promise.all(Array.from({ length: FILE_CONCURRENCY }, runner));
    if (failed) throw failed;
    throwIfAborted(signal);
    // Directory modes and times last, deepest first, so writing their contents does not change them.
    for (const e of [...selected].reverse()) {
      if (e.t !== 'd') continue;
      const dest = join(target, ...e.p.split('/'));
      await chmod(dest, e.m & 0o7777);
      await utimes(dest, mtimeSeconds(e), mtimeSeconds(e));
    }
  } catch (err) {
    if (signal?.aborted && !(err instanceof EngineError && err.code !== 'CANCELLED')) throw cancelled();
    throw err;
  } finally {
    await reader.close();
  }
  progress.finish();
  return result;
}

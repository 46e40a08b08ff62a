import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Stats } from 'node:fs';
import { chmod, lstat, lutimes, mkdir, open, rename, symlink, unlink, utimes } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { ChunkReader } from './chunk-reader.ts';
import { EngineError, cancelled, errnoCode, throwIfAborted } from './errors.ts';
import { ProgressReporter } from './progress.ts';
import { collector, release } from './release.ts';
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
/** Chunks of one file fetched ahead of the one being written. */
const READ_AHEAD = 4;
const collect = collector(32 * 1024 * 1024, 256);


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
    let next = 0;
    const startFetch = async (): Promise<void> => {
      const id = ids[next++]!;
      const loc = await reader.locate(id);
      await reader.budget.acquire(loc.rawLength);
      sizes.push(loc.rawLength);
      const p = reader.read(loc);
      p.catch(() => {});
      fetches.push(p);
    };
    let consumed = 0;
    try {
      while (next < ids.length && next < READ_AHEAD) await startFetch();
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
        let off = 0;
        while (off < data.length) off += (await fh.write(data, off, data.length - off, position + off)).bytesWritten;
        position += data.length;
        collect(data.length);
        release(data);
        reader.budget.release(sizes[consumed]!);
        consumed++;
        progress.add(0, data.length);
        if (next < ids.length) await startFetch();
      }
      await fh.sync();
      await fh.close();
      await chmod(temp, e.m & 0o7777);
      await utimes(temp, mtimeSeconds(e), mtimeSeconds(e));
      await rename(temp, dest);
    } catch (err) {
      await fh.close().catch(() => {});
      await unlink(temp).catch(() => {});
      for (let i = consumed; i < fetches.length; i++) {
        await fetches[i]?.catch(() => {});
        reader.budget.release(sizes[i]!);
      }
      throw err;
    }
  };

  const restoreEntry = async (e: TreeEntry): Promise<void> => {
    const dest = join(target, ...e.p.split('/'));
    await mkdir(dirname(dest), { recursive: true });
    const existing = await lstatOrNull(dest);
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
    await writeFile(e, dest);
    result.filesRestored++;
    result.sizeBytes += e.s;
    progress.add(1, 0);
  };

  try {
    for (const e of selected) {
      if (e.t !== 'd') continue;
      const dest = join(target, ...e.p.split('/'));
      const existing = await lstatOrNull(dest);
      if (existing && !existing.isDirectory()) throw new EngineError('RESTORE_CONFLICT', `${e.p} exists and is not a directory`, { path: e.p });
      if (!existing) await mkdir(dest, { recursive: true, mode: 0o700 });
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

import { createHash, randomBytes } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { lstat, lutimes, open, symlink, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import type { ChunkReader } from './chunk-reader.ts';
import { bytesEqual } from './codec.ts';
import { EngineError, errnoCode, throwIfAborted } from './errors.ts';
import type { ProgressReporter } from './progress.ts';
import { CREATE_FLAGS, restoredFileMode } from './restore-write.ts';
import type { SmallFile } from './restore-write.ts';
import { FILE_FLAGS, atPath } from './source.ts';
import type { TreeNode } from './tree.ts';

/**
 * Writes one file or symlink of a restore inside a directory the restore holds open, never
 * through a path: it is created with O_CREAT|O_EXCL|O_NOFOLLOW, written, and given its mode and
 * times through its own descriptor. In a directory the restore made, which is hidden under a
 * temp name until its files are durable (restore-commit.ts), it is created under its real name;
 * in a directory that was there, under a temp name of its own, which restore-commit.ts renames
 * over the real name once it is durable. Either way no half-written file is ever visible under
 * its real path, and a symlink swapped in anywhere above is never followed.
 */

/** Chunks of one file fetched ahead of the one being written. */
const READ_AHEAD = 8;
const SYNC_EVERY = 64 * 1024 * 1024;

export interface FileWriteContext {
  reader: ChunkReader;
  progress: ProgressReporter;
  signal: AbortSignal;
  /** Has the restore's writer write a small file whose plaintext is known (restore-write.ts); throws its errno error. */
  writeSmall: (file: SmallFile, data: Uint8Array) => Promise<void>;
}

/** Where an entry is written: the directory the main thread holds open as `fd` (-1 while only the writer holds it), `made` by the writer. */
export interface EntryDir {
  fd: number;
  made: number | undefined;
}

/** Temp names are `.restore-<random of this process>-<number>`: a temp file or directory is remembered by its number alone. */
export const TEMP_PREFIX = `.restore-${randomBytes(8).toString('hex')}-`;
let tempCount = 0;

/** A temp name's number not used before in this process. */
export function newTemp(): number {
  return ++tempCount;
}

export function tempName(n: number): Buffer {
  return Buffer.from(`${TEMP_PREFIX}${n.toString(36)}`, 'latin1');
}

/** Bytes as a latin1 string (see SmallFile.name). */
export function latin1(bytes: Uint8Array): string {
  return Buffer.prototype.latin1Slice.call(bytes, 0, bytes.length) as string;
}

export function seconds(ns: bigint): number {
  return Number(ns / 1000n) / 1e6;
}

/** What is at `name` in the directory now, or null. */
export async function existing(dirFd: number, name: Uint8Array): Promise<Stats | null> {
  try {
    return await lstat(atPath(dirFd, name));
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw err;
  }
}

export function existingSync(dirFd: number, name: Uint8Array): Stats | null {
  try {
    return lstatSync(atPath(dirFd, name));
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw err;
  }
}

/** Whether the regular file at `name` already holds the node's content (same size and SHA-256). */
export async function sameContent(dirFd: number, name: Uint8Array, node: TreeNode, st: Stats): Promise<boolean> {
  if (!st.isFile() || st.size !== node.size || !node.sha256) return false;
  const fh = await open(atPath(dirFd, name), FILE_FLAGS);
  try {
    if (!(await fh.stat()).isFile()) return false;
    const hash = createHash('sha256');
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let pos = 0; ; ) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
      pos += bytesRead;
    }
    return bytesEqual(hash.digest(), node.sha256);
  } finally {
    await fh.close();
  }
}

/** Creates the symlink as `name` in the directory. */
export async function writeLink(dirFd: number, node: TreeNode, name: Uint8Array): Promise<void> {
  const at = atPath(dirFd, name);
  await symlink(Buffer.from(node.link!), at);
  await lutimes(at, seconds(node.mtimeNs), seconds(node.mtimeNs)).catch(() => {});
}

/** Whether a regular file is written by the restore's writer (restore-write.ts): at most one chunk. */
export function isSmall(node: TreeNode): boolean {
  return (node.chunks?.length ?? 0) <= 1;
}

/**
 * Creates the regular file as `name` in the directory, with its content, mode and mtime (not
 * synced). A small file goes to the writer; a larger one needs the directory open here (`fd`).
 */
export async function writeFile(ctx: FileWriteContext, dir: EntryDir, node: TreeNode, name: Uint8Array): Promise<void> {
  if (isSmall(node)) {
    await writeSmall(ctx, dir, node, name);
    return;
  }
  const at = atPath(dir.fd, name);
  const fh = await open(at, CREATE_FLAGS, 0o600);
  try {
    await writeChunks(ctx, fh, node);
    await fh.chmod(restoredFileMode(node.mode));
    await fh.utimes(seconds(node.mtimeNs), seconds(node.mtimeNs));
    await fh.close();
  } catch (err) {
    await fh.close().catch(() => {});
    await unlink(at).catch(() => {});
    throw err;
  }
}

/**
 * A file of at most one chunk (most files of a source tree): the writer decodes its chunk and
 * writes it (restore-write.ts), with the other small files of the same run; an empty file, or
 * one whose chunk had to be read on its own, goes to the writer with its plaintext.
 */
async function writeSmall(ctx: FileWriteContext, dir: EntryDir, node: TreeNode, name: Uint8Array): Promise<void> {
  const { reader, progress, signal } = ctx;
  const file: SmallFile = { dirFd: dir.fd, made: dir.made, name: latin1(name), mode: node.mode, mtime: seconds(node.mtimeNs) };
  const id = node.chunks?.[0];
  if (id === undefined) {
    throwIfAborted(signal);
    await ctx.writeSmall(file, new Uint8Array(0));
    return;
  }
  // The common case waits once: the blob is in the index and the budget has room.
  const loc = reader.find(id) ?? (await reader.locate(id));
  if (!reader.budget.tryAcquire(loc.rawLength)) await reader.budget.acquire(loc.rawLength);
  try {
    const data = await reader.writeSmall(loc, file);
    if (data) {
      throwIfAborted(signal);
      await ctx.writeSmall(file, data);
    }
    progress.add(0, loc.rawLength);
  } finally {
    reader.budget.release(loc.rawLength);
  }
}

/**
 * Writes a multi-chunk file: each chunk is read and handed to a worker, which decodes it and
 * writes it at its offset itself (nothing comes back to this thread); up to READ_AHEAD chunks of
 * the file at once, in any order. A chunk only takes budget that is free now while others of the
 * file are in flight (a file that waited for budget while holding chunks could deadlock with
 * others doing the same); it waits for budget only when nothing of the file is in flight.
 * Resolves, or throws, only once no worker can still write to the file.
 */
async function writeChunks(ctx: FileWriteContext, fh: FileHandle, node: TreeNode): Promise<void> {
  const { reader, progress, signal } = ctx;
  const ids = node.chunks ?? [];
  const inFlight = new Set<Promise<void>>();
  let failure = null as { err: unknown } | null;
  let syncing: Promise<void> | null = null;
  let sinceSync = 0;
  let position = 0;
  try {
    for (const id of ids) {
      throwIfAborted(signal);
      if (failure) throw failure.err;
      const loc = await reader.locate(id);
      while (inFlight.size >= READ_AHEAD) await Promise.race(inFlight);
      while (!reader.budget.tryAcquire(loc.rawLength)) {
        if (inFlight.size === 0) {
          await reader.budget.acquire(loc.rawLength);
          break;
        }
        await Promise.race(inFlight);
      }
      const write: Promise<void> = reader.readTo(loc, fh.fd, position).then(
        () => progress.add(0, loc.rawLength),
        (err: unknown) => {
          failure ??= { err };
        },
      ).finally(() => {
        reader.budget.release(loc.rawLength);
        inFlight.delete(write);
      });
      inFlight.add(write);
      position += loc.rawLength;
      // A large file is flushed as it goes: its dirty pages stay bounded, and the commit's sync does not wait for all of it.
      sinceSync += loc.rawLength;
      if (sinceSync >= SYNC_EVERY && !syncing) {
        sinceSync = 0;
        syncing = Promise.all(inFlight)
          .then(() => fh.datasync())
          .finally(() => {
            syncing = null;
          });
        syncing.catch(() => {});
      }
    }
    await Promise.all(inFlight);
    if (failure) throw failure.err;
    await syncing;
  } catch (err) {
    await Promise.all(inFlight);
    await (syncing as Promise<void> | null)?.catch(() => {});
    // A write asked of a pool that was closed may still be under way in its worker until the worker has stopped.
    if (signal.aborted) await reader.workersStopped();
    throw err instanceof EngineError || errnoCode(err) ? err : new EngineError('INTERNAL_ERROR', (err as Error).message);
  }
}

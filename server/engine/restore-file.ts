import { createHash, randomBytes } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { lstat, lutimes, open, symlink, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import type { ChunkReader } from './chunk-reader.ts';
import { bytesEqual } from './codec.ts';
import { EngineError, errnoCode, throwIfAborted } from './errors.ts';
import type { ProgressReporter } from './progress.ts';
import { releasePrivate } from './release.ts';
import { CREATE_FLAGS, restoredFileMode, writeSmallFile } from './restore-write.ts';
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

function seconds(ns: bigint): number {
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

/** Creates the regular file as `name` in the directory, with its content, mode and mtime (not synced). */
export async function writeFile(ctx: FileWriteContext, dirFd: number, node: TreeNode, name: Uint8Array): Promise<void> {
  if ((node.chunks?.length ?? 0) <= 1) {
    await writeSmall(ctx, dirFd, node, name);
    return;
  }
  const at = atPath(dirFd, name);
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
 * A file of at most one chunk (most files of a source tree): the worker that decodes its chunk
 * writes it (restore-write.ts), with the other small files of the same run; an empty file, or
 * one whose chunk had to be read on its own, is written here.
 */
async function writeSmall(ctx: FileWriteContext, dirFd: number, node: TreeNode, name: Uint8Array): Promise<void> {
  const { reader, progress, signal } = ctx;
  // A copy of its own: the name goes to a worker, and a view of Buffer's pool would be sent with the whole pool slab.
  const file: SmallFile = { dirFd, name: new Uint8Array(name), mode: node.mode, mtime: seconds(node.mtimeNs) };
  const id = node.chunks?.[0];
  if (id === undefined) {
    throwIfAborted(signal);
    writeSmallFile(file, new Uint8Array(0));
    return;
  }
  const loc = await reader.locate(id);
  await reader.budget.acquire(loc.rawLength);
  try {
    const data = await reader.writeSmall(loc, file);
    if (data) {
      throwIfAborted(signal);
      writeSmallFile(file, data);
    }
    progress.add(0, loc.rawLength);
  } finally {
    reader.budget.release(loc.rawLength);
  }
}

/**
 * Writes a multi-chunk file: chunks are fetched ahead and written at their offsets without
 * waiting for each other. Read-ahead only takes budget that is free now (a file that waited for
 * budget while holding fetched chunks could deadlock with others doing the same); it waits only
 * when it holds nothing in flight.
 */
async function writeChunks(ctx: FileWriteContext, fh: FileHandle, node: TreeNode): Promise<void> {
  const { reader, progress, signal } = ctx;
  const ids = node.chunks ?? [];
  const fetches: (Promise<Uint8Array> | undefined)[] = [];
  const sizes: number[] = [];
  const writes: Promise<void>[] = [];
  let next = 0;
  let consumed = 0;
  let syncing: Promise<void> | null = null;
  let sinceSync = 0;
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
  try {
    await startFetch(true);
    while (next < ids.length && next < READ_AHEAD && (await startFetch(false)));
    let position = 0;
    while (consumed < ids.length) {
      throwIfAborted(signal);
      const data = await fetches[consumed]!;
      fetches[consumed] = undefined; // written chunks are not kept alive
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
      // A large file is flushed as it goes: its dirty pages stay bounded, and the commit's sync does not wait for all of it.
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
  } catch (err) {
    await Promise.allSettled(writes);
    await (syncing as Promise<void> | null)?.catch(() => {});
    for (let i = consumed; i < fetches.length; i++) {
      await fetches[i]?.catch(() => {});
      reader.budget.release(sizes[i]!);
    }
    throw err instanceof EngineError || errnoCode(err) ? err : new EngineError('INTERNAL_ERROR', (err as Error).message);
  }
}

import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants, fchmodSync, fsync, futimesSync, openSync, writeSync } from 'node:fs';
import { lstat, lutimes, open, rename, symlink, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { promisify } from 'node:util';
import type { ChunkReader } from './chunk-reader.ts';
import { bytesEqual } from './codec.ts';
import { EngineError, errnoCode, throwIfAborted } from './errors.ts';
import type { ProgressReporter } from './progress.ts';
import { releasePrivate } from './release.ts';
import { FILE_FLAGS, atPath } from './source.ts';
import type { TreeNode } from './tree.ts';

/**
 * Writes one file or symlink of a restore inside a directory the restore holds open, never
 * through a path: the temp file is created with O_CREAT|O_EXCL|O_NOFOLLOW under a short random
 * name in that directory, written, given its mode and times through its own descriptor, made
 * durable (fsync), then renamed over the real name in the same directory. No half-written file
 * is ever visible under its real name, and a symlink swapped in anywhere above is never
 * followed.
 */
const fsyncFd = promisify(fsync);
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/** Chunks of one file fetched ahead of the one being written. */
const READ_AHEAD = 8;
const SYNC_EVERY = 64 * 1024 * 1024;

export interface FileWriteContext {
  reader: ChunkReader;
  progress: ProgressReporter;
  signal: AbortSignal;
}

function tempName(): Buffer {
  return Buffer.from(`.restore-${randomBytes(8).toString('hex')}`);
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

/** Creates a symlink (temp name, then rename). */
export async function writeLink(dirFd: number, node: TreeNode): Promise<void> {
  const temp = atPath(dirFd, tempName());
  await symlink(Buffer.from(node.link!), temp);
  try {
    await lutimes(temp, seconds(node.mtimeNs), seconds(node.mtimeNs)).catch(() => {});
    await rename(temp, atPath(dirFd, node.name));
  } catch (err) {
    await unlink(temp).catch(() => {});
    throw err;
  }
}

/** Creates a regular file with its content, mode and mtime (temp name, fsync, then rename). */
export async function writeFile(ctx: FileWriteContext, dirFd: number, node: TreeNode): Promise<void> {
  const temp = atPath(dirFd, tempName());
  if ((node.chunks?.length ?? 0) <= 1) return writeSmall(ctx, dirFd, node, temp);
  const fh = await open(temp, CREATE_FLAGS, 0o600);
  try {
    await writeChunks(ctx, fh, node);
    await fh.chmod(node.mode & 0o7777);
    await fh.utimes(seconds(node.mtimeNs), seconds(node.mtimeNs));
    await fh.sync();
    await fh.close();
    await rename(temp, atPath(dirFd, node.name));
  } catch (err) {
    await fh.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw err;
  }
}

/**
 * A file of at most one chunk (most files of a source tree): created, written and given its mode
 * and times with synchronous calls (a thread-pool round trip each would cost more than the call),
 * fsynced asynchronously, then renamed into place.
 */
async function writeSmall(ctx: FileWriteContext, dirFd: number, node: TreeNode, temp: Buffer): Promise<void> {
  const { reader, progress, signal } = ctx;
  let data: Uint8Array = new Uint8Array(0);
  let held = 0;
  try {
    const id = node.chunks?.[0];
    if (id !== undefined) {
      const loc = await reader.locate(id);
      await reader.budget.acquire(loc.rawLength);
      held = loc.rawLength;
      data = await reader.read(loc);
    }
    throwIfAborted(signal);
    let fd = openSync(temp, CREATE_FLAGS, 0o600);
    try {
      for (let off = 0; off < data.length; ) off += writeSync(fd, data, off, data.length - off, off);
      fchmodSync(fd, node.mode & 0o7777);
      futimesSync(fd, seconds(node.mtimeNs), seconds(node.mtimeNs));
      await fsyncFd(fd);
      closeSync(fd);
      fd = -1;
      await rename(temp, atPath(dirFd, node.name));
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

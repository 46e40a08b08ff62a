import { closeSync, constants, fchmodSync, futimesSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { atPath } from './source.ts';

/**
 * A restore's writer gets its small files in messages of at most this many, with twice as many
 * in flight (restore.ts): the next message is already queued when it finishes one, instead of
 * idling while the main thread turns its answer into the next.
 */
export const WRITE_BATCH_FILES = 64;

/**
 * Creating one small restored file (at most one chunk) under its temp name, through the handle
 * of its directory: O_CREAT|O_EXCL|O_NOFOLLOW with its mode, one write, fchmod only when the
 * umask took bits away, futimes on its own descriptor, close. Synchronous calls: the worker
 * that decoded a run of small files writes them here (restore-file.ts for an empty file), so a
 * file costs no thread round trip of its own. Not synced: restore-commit.ts makes it durable
 * before it is renamed.
 */
export const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Where and how a small file is written: its directory (held open by the main thread as `dirFd`,
 * or by the restore's writer as its number `made`, see worker.ts), its name, mode and mtime.
 */
export interface SmallFile {
  dirFd: number;
  made?: number;
  /** The name's bytes as a latin1 string (one char a byte): a string costs the main thread, and the message, a fraction of an array buffer. */
  name: string;
  mode: number;
  /** Seconds since the epoch (fractional). */
  mtime: number;
}

/**
 * The mode a restored file gets: its permission bits and the sticky bit, never set-user-ID or
 * set-group-ID. The file belongs to the service's user, not to whoever owned the original, so
 * those bits would let anyone who can run it act as the service (or as root).
 */
export function restoredFileMode(mode: number): number {
  return mode & 0o1777;
}

/** The process's umask: a file created with a mode it leaves whole needs no fchmod. */
const UMASK = (() => {
  try {
    return parseInt(/^Umask:\s*([0-7]+)/m.exec(readFileSync('/proc/self/status', 'latin1'))?.[1] ?? '7777', 8);
  } catch {
    return 0o7777;
  }
})();

/** Writes `data` as the file in the directory open as `dirFd`; a failure removes what was created and is thrown (an errno error). */
export function writeSmallFile(file: SmallFile, data: Uint8Array, dirFd: number): void {
  const path = atPath(dirFd, file.name);
  const mode = restoredFileMode(file.mode);
  let fd = openSync(path, CREATE_FLAGS, mode & 0o777);
  try {
    for (let off = 0; off < data.length; ) off += writeSync(fd, data, off, data.length - off, off);
    if ((mode & UMASK) !== 0 || (mode & 0o1000) !== 0) fchmodSync(fd, mode);
    futimesSync(fd, file.mtime, file.mtime);
    closeSync(fd);
    fd = -1;
  } catch (err) {
    if (fd >= 0) closeSync(fd);
    try {
      unlinkSync(path);
    } catch {}
    throw err;
  }
}

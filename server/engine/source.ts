import type { BigIntStats, PathLike, Stats } from 'node:fs';
import { closeSync, constants, fstatSync, open, openSync } from 'node:fs';
import { promisify } from 'node:util';
import { errnoCode } from './errors.ts';

/**
 * How a backup reaches its source: by handle, never by a path that can be re-pointed. A
 * directory is opened with O_DIRECTORY|O_NOFOLLOW and its entries are reached through
 * /proc/self/fd/<dirfd>/<name>, which gives Node's fs the semantics of openat(2): the name is
 * looked up in the directory that was opened, whatever has been renamed or swapped above it since
 * (and the path stays short, so trees deeper than PATH_MAX work). Files are opened with
 * O_NOFOLLOW|O_NONBLOCK|O_NOCTTY, and the opened object is checked (fstat: type, device, inode as
 * the walk saw them) before a byte is read: a symlink, FIFO, socket or device swapped in is never
 * followed, opened for reading or waited on. (libuv opens every descriptor close-on-exec.)
 */
export const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
export const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

const PREFIX = '/proc/self/fd/';

/**
 * Opens a plain descriptor (not a FileHandle, which would close itself when collected): directory
 * handles are shared between the walk's steps and closed by whoever finishes last.
 */
export const openFd = promisify(open) as (path: PathLike, flags: number, mode?: number) => Promise<number>;

/**
 * Opens a directory of the source as the walk saw it (`expected`: its device and inode), or says
 * why not: a symlink swapped in is not followed (O_NOFOLLOW), another directory is not entered.
 * Synchronous, as a restore opens its directories: a round trip to the thread pool per directory
 * (the open, then its answer back to the event loop) cost a backup of the real tree 6 % of its
 * wall time and 5 % of its CPU; opened by a worker, behind its queue of small files, the walk
 * waited for each.
 */
export function openDir(path: PathLike, expected: { dev: bigint; ino: bigint }): { fd: number } | { error: string; code: string | undefined } {
  let fd: number;
  try {
    fd = openSync(path, DIR_FLAGS);
  } catch (err) {
    return { error: openFailure(err), code: errnoCode(err) };
  }
  try {
    const changed = changedSinceWalk(fstatOpened(fd, expected), { kind: 'd', ...expected });
    if (!changed) return { fd };
    closeSync(fd);
    return { error: changed, code: undefined };
  } catch (err) {
    try {
      closeSync(fd);
    } catch {}
    return { error: `cannot be read: ${(err as Error).message}`, code: errnoCode(err) };
  }
}

/** A name given as a latin1 string (one character per byte, as readdir returns it with that encoding) that is not ASCII. */
const NOT_ASCII = /[^\x00-\x7f]/;

/**
 * The path that names `name` inside the directory open as `dirFd` (or `name` itself, an absolute
 * path, for dirFd -1). A name's bytes may be given as a latin1 string: the path is then a string
 * when they are ASCII (fs writes a string path as UTF-8, the same bytes), else a buffer.
 */
export function atPath(dirFd: number, name: Uint8Array): Buffer;
export function atPath(dirFd: number, name: Uint8Array | string): Buffer | string;
export function atPath(dirFd: number, name: Uint8Array | string): Buffer | string {
  if (typeof name === 'string') {
    const path = dirFd < 0 ? name : `${PREFIX}${dirFd}/${name}`;
    return NOT_ASCII.test(name) ? Buffer.from(path, 'latin1') : path;
  }
  if (dirFd < 0) return Buffer.from(name);
  const prefix = `${PREFIX}${dirFd}/`;
  const out = Buffer.allocUnsafe(prefix.length + name.length);
  out.write(prefix, 0, 'latin1');
  out.set(name, prefix.length);
  return out;
}

/** The directory open as `dirFd`, itself. */
export function fdDir(dirFd: number): string {
  return `${PREFIX}${dirFd}`;
}

export type EntryKind = 'f' | 'd' | 'l' | 'fifo' | 'socket' | 'char' | 'block' | 'other';

export function kindOfMode(mode: number): EntryKind {
  switch (mode & constants.S_IFMT) {
    case constants.S_IFREG:
      return 'f';
    case constants.S_IFDIR:
      return 'd';
    case constants.S_IFLNK:
      return 'l';
    case constants.S_IFIFO:
      return 'fifo';
    case constants.S_IFSOCK:
      return 'socket';
    case constants.S_IFCHR:
      return 'char';
    case constants.S_IFBLK:
      return 'block';
    default:
      return 'other';
  }
}

const KIND_NAMES: Record<EntryKind, string> = {
  f: 'a regular file',
  d: 'a directory',
  l: 'a symlink',
  fifo: 'a FIFO',
  socket: 'a socket',
  char: 'a character device',
  block: 'a block device',
  other: 'a special file',
};

export function describeKind(kind: EntryKind): string {
  return KIND_NAMES[kind];
}

/** Why an entry the walk saw could not be opened. */
export function openFailure(err: unknown): string {
  switch (errnoCode(err)) {
    case 'ENOENT':
      return 'vanished during the backup';
    case 'ELOOP':
    case 'ENOTDIR':
      return 'replaced during the backup (a symlink or another type now): not followed';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    default:
      return `cannot be read: ${(err as Error).message}`;
  }
}

const EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The status of a descriptor just opened, for `changedSinceWalk`: taken synchronously (an open
 * descriptor, no path looked up, as restore's checks are; a round trip to the thread pool per
 * directory cost more than the call), as numbers unless the device or inode the walk saw is too
 * large to be one exactly (a bigint per field otherwise, a dozen per call).
 */
export function fstatOpened(fd: number, expected: { dev: bigint; ino: bigint }): Stats | BigIntStats {
  return expected.dev <= EXACT && expected.ino <= EXACT ? fstatSync(fd) : fstatSync(fd, { bigint: true });
}

/** Whether a status (numbers or bigints) is of the object with this device and inode. */
function sameObject(st: Stats | BigIntStats, dev: bigint, ino: bigint): boolean {
  if (typeof st.ino === 'bigint') return st.dev === dev && st.ino === ino;
  // A number above 2^53 - 1 is never equal to one of these: exact, or refused.
  return dev <= EXACT && ino <= EXACT && st.dev === Number(dev) && st.ino === Number(ino);
}

/** Null when the opened object is what the walk saw, else why it is not read. */
export function changedSinceWalk(st: Stats | BigIntStats, expected: { kind: 'f' | 'd'; dev: bigint; ino: bigint }): string | null {
  const kind = kindOfMode(Number(st.mode));
  if (kind !== expected.kind) return `replaced during the backup (now ${describeKind(kind)}): not read`;
  if (!sameObject(st, expected.dev, expected.ino)) return 'replaced during the backup by another file: not read';
  return null;
}

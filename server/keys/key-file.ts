import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** A key file other users of the host may read or write: the server will not use it. */
export class KeyFileExposedError extends Error {
  constructor(file: string, mode: number) {
    super(`${file} is open to other users of the host (mode 0${(mode & 0o777).toString(8)}); make it the service user's alone: chmod 600 ${file}`);
    this.name = 'KeyFileExposedError';
  }
}

/**
 * A key as kept in a file: its bytes in base64url, then a newline; the file 0600 in a 0700
 * directory. A file group or others may read or write is refused, as ssh refuses such a key.
 */
export function readKeyFile(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    const { mode } = fstatSync(fd);
    if (mode & 0o077) throw new KeyFileExposedError(file, mode);
    return Buffer.from(readFileSync(fd, 'utf8').trim(), 'base64url');
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `key` to `file`, which must not exist yet: under a temporary name, fsynced, then
 * hard-linked into place, so no reader ever sees half a key. False when `file` already existed
 * (it is left as it was).
 */
export function writeKeyFile(file: string, key: Uint8Array): boolean {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, Buffer.from(key).toString('base64url') + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return false;
  } finally {
    unlinkSync(tmp);
    fsyncDirectory(dirname(file));
  }
}

export function fsyncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * The key in `file`, created with `bytes` random bytes on first use. Creation is race-free: two
 * processes starting together agree on one key.
 */
export function loadOrCreateKeyFile(file: string, bytes = 32): Buffer {
  try {
    return readKeyFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  writeKeyFile(file, randomBytes(bytes));
  return readKeyFile(file);
}

import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DEFAULT_PACKING, checkName, type Backend, type ObjectInfo, type ObjectWriter, type Packing } from './backend.ts';
import { ObjectNotFoundError, StorageFullError, StorageUnavailableError } from './errors.ts';

/**
 * Packs are written to their temp file as they fill (`create`), so what a backup holds of them is
 * a slab being filled per open pack and the writes under way: 8 MiB of those, beyond which the
 * backup waits for the disk.
 */
export const LOCAL_PACKING: Packing = { dataPackBytes: DEFAULT_PACKING.dataPackBytes, unwrittenBytes: 8 * 2 ** 20, writesAsFilled: true };

/**
 * A repository in a local directory. A save goes to a temp name beside its target
 * (".<name>.tmp-<random>", never listed), is fsynced, then renamed (or, with ifAbsent, hard-linked,
 * which fails if the name exists) into place, and the directory is fsynced: a crash leaves the
 * old state or the whole new object, plus stray temps that a prune removes. An object written
 * piece by piece (`create`: a pack) goes to a temp file in the root (".object.tmp-<random>") as
 * it comes, and is fsynced and renamed into place at the commit. Files are created 0600 and
 * directories 0700: repository contents are for the service's user only.
 */
export class LocalBackend implements Backend {
  readonly root: string;
  readonly location: string;
  readonly packing: Packing;

  constructor(root: string, options: { packing?: Packing } = {}) {
    this.root = root;
    this.location = root;
    this.packing = options.packing ?? LOCAL_PACKING;
  }

  private path(name: string): string {
    checkName(name);
    return join(this.root, ...name.split('/'));
  }

  async save(name: string, parts: readonly Uint8Array[], options: { ifAbsent?: boolean } = {}): Promise<boolean> {
    const target = this.path(name);
    const dir = dirname(target);
    const temp = join(dir, `.${target.slice(dir.length + 1)}.tmp-${randomBytes(6).toString('hex')}`);
    try {
      const fh = await openTemp(temp);
      try {
        await writeAll(fh, parts);
        await fh.sync();
      } finally {
        await fh.close();
      }
      if (options.ifAbsent) {
        try {
          await link(temp, target); // fails with EEXIST instead of replacing
        } catch (err) {
          if (errnoOf(err) === 'EEXIST') return false;
          throw err;
        } finally {
          await unlink(temp).catch(() => {});
        }
      } else {
        await rename(temp, target);
      }
      await syncDir(dir);
      return true;
    } catch (err) {
      await unlink(temp).catch(() => {});
      throw translate(err, name);
    }
  }

  create(): ObjectWriter {
    return new LocalObject(join(this.root, `.object.tmp-${randomBytes(6).toString('hex')}`), (name) => this.path(name));
  }

  async load(name: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    const file = this.path(name);
    let fh: FileHandle;
    try {
      fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      throw translate(err, name);
    }
    try {
      const offset = range?.offset ?? 0;
      const length = range?.length ?? (await fh.stat()).size;
      const out = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        const { bytesRead } = await fh.read(out, done, length - done, offset + done);
        if (bytesRead === 0) throw new RangeError(`${name} holds fewer than ${offset + length} bytes`);
        done += bytesRead;
      }
      return out;
    } catch (err) {
      throw translate(err, name);
    } finally {
      await fh.close();
    }
  }

  async stat(name: string): Promise<ObjectInfo> {
    try {
      const st = await stat(this.path(name));
      return { name, size: st.size, modified: st.mtime };
    } catch (err) {
      throw translate(err, name);
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    // "data/" lists the directory data; "data/a" lists what starts with "a" inside it.
    const slash = prefix.lastIndexOf('/');
    const dirPart = slash < 0 ? '' : prefix.slice(0, slash);
    const namePart = slash < 0 ? prefix : prefix.slice(slash + 1);
    const startDir = dirPart === '' ? this.root : this.path(dirPart);
    const walk = async function* (dir: string, rel: string, filter: string): AsyncIterable<ObjectInfo> {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return;
        throw translate(err, rel);
      }
      for (const e of entries) {
        if (e.name.startsWith('.') || !e.name.startsWith(filter)) continue;
        const name = rel === '' ? e.name : `${rel}/${e.name}`;
        const full = join(dir, e.name);
        if (e.isDirectory()) yield* walk(full, name, '');
        else if (e.isFile()) {
          const st = await stat(full).catch(() => null); // removed meanwhile: not listed
          if (st) yield { name, size: st.size, modified: st.mtime };
        }
      }
    };
    yield* walk(startDir, dirPart, namePart);
  }

  async removeUnfinished(olderThan: Date): Promise<{ count: number; bytes: number }> {
    const removed = { count: 0, bytes: 0 };
    const walk = async (dir: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const full = join(dir, e.name);
        if (e.isDirectory()) await walk(full);
        else if (e.isFile() && e.name.startsWith('.') && e.name.includes('.tmp-')) {
          const st = await stat(full).catch(() => null);
          if (!st || st.mtime >= olderThan) continue;
          await unlink(full).then(
            () => {
              removed.count++;
              removed.bytes += st.size;
            },
            () => {},
          );
        }
      }
    };
    await walk(this.root);
    return removed;
  }

  async remove(name: string): Promise<void> {
    try {
      await unlink(this.path(name));
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw translate(err, name);
    }
  }
}

/** An object written to its temp file as it comes (see LocalBackend). */
class LocalObject implements ObjectWriter {
  private readonly temp: string;
  private readonly pathOf: (name: string) => string;
  private file: Promise<FileHandle> | null = null;
  private size = 0;
  private readonly writes = new Set<Promise<void>>();
  private failure: unknown = null;
  private open = true;

  constructor(temp: string, pathOf: (name: string) => string) {
    this.temp = temp;
    this.pathOf = pathOf;
  }

  write(part: Uint8Array): Promise<void> {
    if (!this.open || this.failure || part.length === 0) return Promise.resolve();
    const position = this.size;
    this.size += part.length;
    const done = (this.file ??= openTemp(this.temp))
      .then((fh) => writeAt(fh, part, position))
      .catch((err: unknown) => {
        this.failure ??= err;
      });
    this.writes.add(done);
    void done.then(() => this.writes.delete(done));
    return done;
  }

  async commit(name: string): Promise<void> {
    if (!this.open) throw new Error('the object was already committed or aborted');
    this.open = false;
    try {
      const target = this.pathOf(name);
      await Promise.all(this.writes);
      if (this.failure) throw this.failure;
      const fh = await (this.file ??= openTemp(this.temp));
      await fh.sync();
      this.file = null;
      await fh.close();
      const dir = dirname(target);
      await rename(this.temp, target).catch(async (err: unknown) => {
        if (errnoOf(err) !== 'ENOENT') throw err;
        await makeDirs(dir);
        await rename(this.temp, target);
      });
      await syncDir(dir);
    } catch (err) {
      await this.discard();
      throw translate(err, name);
    }
  }

  async abort(): Promise<void> {
    this.open = false;
    await this.discard();
  }

  private async discard(): Promise<void> {
    await Promise.all(this.writes);
    const file = this.file;
    this.file = null;
    if (file) await file.then((fh) => fh.close()).catch(() => {});
    await unlink(this.temp).catch(() => {});
  }
}

async function writeAt(fh: FileHandle, part: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < part.length) {
    const { bytesWritten } = await fh.write(part, done, part.length - done, position + done);
    done += bytesWritten;
  }
}

async function openTemp(temp: string): Promise<FileHandle> {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  try {
    return await open(temp, flags, 0o600);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
    await makeDirs(dirname(temp));
    return await open(temp, flags, 0o600);
  }
}

/**
 * `mkdir -p` (0700) that fails with the real reason: Node's recursive mkdir reports ENOENT when a
 * directory cannot be made on a read-only filesystem or without permission, which would read as a
 * missing object instead of unusable storage.
 */
async function makeDirs(dir: string): Promise<void> {
  try {
    await mkdir(dir, { mode: 0o700 });
  } catch (err) {
    if (errnoOf(err) === 'EEXIST') return;
    if (errnoOf(err) !== 'ENOENT' || dirname(dir) === dir) throw err;
    await makeDirs(dirname(dir));
    await mkdir(dir, { mode: 0o700 }).catch((again: unknown) => {
      if (errnoOf(again) !== 'EEXIST') throw again;
    });
  }
  // The new directory's entry is durable before anything is renamed into it (a parent that may not be read is left as it is).
  await syncDir(dirname(dir)).catch((err: unknown) => {
    if (errnoOf(err) !== 'EACCES' && errnoOf(err) !== 'EPERM') throw err;
  });
}

export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeAll(fh: FileHandle, parts: readonly Uint8Array[]): Promise<void> {
  let pending = parts.filter((p) => p.length > 0);
  let position = 0;
  while (pending.length > 0) {
    // writev takes at most IOV_MAX (1024) buffers at a time.
    const batch = pending.slice(0, 1024);
    const { bytesWritten } = await fh.writev(batch, position);
    position += bytesWritten;
    pending = skip(pending, bytesWritten);
  }
}

function skip(parts: Uint8Array[], n: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const p of parts) {
    if (n >= p.length) {
      n -= p.length;
      continue;
    }
    out.push(n > 0 ? p.subarray(n) : p);
    n = 0;
  }
  return out;
}

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** The backend's own errors for what the engine must tell apart; anything else passes through. */
function translate(err: unknown, name: string): unknown {
  switch (errnoOf(err)) {
    case 'ENOENT':
      return new ObjectNotFoundError(name, { cause: err });
    case 'ENOSPC':
    case 'EDQUOT':
      return new StorageFullError(`no space left for ${name}`, { cause: err });
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
    case 'EIO':
    case 'ENOTDIR': // a directory of the repository replaced by a file
    case 'ELOOP':
      return new StorageUnavailableError(`cannot use the repository directory: ${(err as Error).message}`, { cause: err });
    default:
      return err;
  }
}

import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { EngineError, errnoCode } from '../errors.ts';
import type { Backend, ObjectWriter, RangeReader } from './backend.ts';

/**
 * A repository in a local directory. A write goes to a temp name beside its target
 * (".<name>.tmp-<random>", never listed), is fsynced, renamed into place, and the directory
 * is fsynced, so a crash leaves either the old state or the new object, plus stray temps.
 */
export class LocalBackend implements Backend {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  private path(name: string): string {
    if (name.split('/').some((p) => p === '' || p === '.' || p === '..')) {
      throw new EngineError('INVALID_ARGUMENT', `bad object name ${name}`);
    }
    return join(this.root, ...name.split('/'));
  }

  /** Creates ".<name>.tmp-<random>" beside the target (and the directory when missing). */
  private async openTemp(target: string): Promise<{ temp: string; fh: FileHandle }> {
    const dir = dirname(target);
    const temp = join(dir, `.${target.slice(dir.length + 1)}.tmp-${randomBytes(6).toString('hex')}`);
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;
    try {
      return { temp, fh: await open(temp, flags, 0o600) };
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
      await mkdir(dir, { recursive: true });
      return { temp, fh: await open(temp, flags, 0o600) };
    }
  }

  private async writeTemp(target: string, parts: Uint8Array[]): Promise<string> {
    const { temp, fh } = await this.openTemp(target);
    try {
      await writeAll(fh, parts, 0);
      await fh.sync();
    } catch (err) {
      await fh.close().catch(() => {});
      await unlink(temp).catch(() => {});
      throw err;
    }
    await fh.close();
    return temp;
  }

  async createWriter(name: string): Promise<ObjectWriter> {
    const target = this.path(name);
    const { temp, fh } = await this.openTemp(target);
    let closed = false;
    return {
      write: (parts, offset) => writeAll(fh, parts, offset),
      async commit() {
        closed = true;
        try {
          await fh.sync();
          await fh.close();
        } catch (err) {
          await fh.close().catch(() => {});
          await unlink(temp).catch(() => {});
          throw err;
        }
        await rename(temp, target);
        await syncDir(dirname(target));
      },
      async abort() {
        if (!closed) await fh.close().catch(() => {});
        closed = true;
        await unlink(temp).catch(() => {});
      },
    };
  }

  async put(name: string, parts: Uint8Array[]): Promise<void> {
    const target = this.path(name);
    const temp = await this.writeTemp(target, parts);
    await rename(temp, target);
    await syncDir(dirname(target));
  }

  async create(name: string, parts: Uint8Array[]): Promise<boolean> {
    const target = this.path(name);
    const temp = await this.writeTemp(target, parts);
    try {
      await link(temp, target); // fails with EEXIST instead of replacing
    } catch (err) {
      if (errnoCode(err) === 'EEXIST') return false;
      throw err;
    } finally {
      await unlink(temp).catch(() => {});
    }
    await syncDir(dirname(target));
    return true;
  }

  async get(name: string): Promise<Uint8Array> {
    return readFile(this.path(name));
  }

  async openRead(name: string): Promise<RangeReader> {
    const fh = await open(this.path(name), 'r');
    return {
      async read(offset, length) {
        const out = new Uint8Array(length);
        let done = 0;
        while (done < length) {
          const { bytesRead } = await fh.read(out, done, length - done, offset + done);
          if (bytesRead === 0) throw new EngineError('CORRUPT_DATA', `${name} is shorter than expected`, { object: name });
          done += bytesRead;
        }
        return out;
      },
      close: () => fh.close(),
    };
  }

  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    const walk = async (rel: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(this.path(rel), { withFileTypes: true });
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') return;
        throw err;
      }
      for (const e of entries) {
        if (e.name.startsWith('.')) continue;
        if (e.isDirectory()) await walk(`${rel}/${e.name}`);
        else if (e.isFile()) out.push(`${rel}/${e.name}`);
      }
    };
    await walk(prefix);
    return out.sort();
  }

  async size(name: string): Promise<number | null> {
    try {
      return (await stat(this.path(name))).size;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(name: string): Promise<void> {
    await unlink(this.path(name)).catch((err) => {
      if (errnoCode(err) !== 'ENOENT') throw err;
    });
  }
}

export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeAll(fh: FileHandle, parts: Uint8Array[], offset: number): Promise<void> {
  let pending = parts.filter((p) => p.length > 0);
  let position = offset;
  while (pending.length > 0) {
    const { bytesWritten } = await fh.writev(pending, position);
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

import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdtemp, open, readFile, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Test helpers: temp dirs, fast pseudo-random files, and a full description of a tree for comparisons. */
export async function tempDir(prefix = 'engine-'): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  // rm(1) removes trees deeper than PATH_MAX, which fs.rm cannot.
  const cleanup = (): Promise<void> => rm(path, { recursive: true, force: true }).catch(() => void execFileSync('rm', ['-rf', path]));
  return { path, cleanup };
}

/** Writes `size` random bytes in 8 MiB pieces (never the whole file in memory). */
export async function writeRandomFile(path: string, size: number): Promise<void> {
  const fh = await open(path, 'w');
  try {
    for (let done = 0; done < size; ) {
      const n = Math.min(8 << 20, size - done);
      await fh.write(randomBytes(n), 0, n, done);
      done += n;
    }
  } finally {
    await fh.close();
  }
}

export async function sha256Of(path: string): Promise<string> {
  return createHash('sha256').update(await readFile(path)).digest('hex');
}

export interface TreeDescription {
  [path: string]: { type: string; mode: number; mtimeMs?: number; size?: number; sha256?: string; link?: string };
}

/** Type, permission bits, mtime (ms), size and content hash of every entry under `root`. */
export async function describeTree(root: string, opts: { mtimes?: boolean } = {}): Promise<TreeDescription> {
  const out: TreeDescription = {};
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      const abs = join(dir, name);
      const p = rel ? `${rel}/${name}` : name;
      const st = await lstat(abs);
      const mtimeMs = opts.mtimes === false ? undefined : Math.floor(st.mtimeMs);
      if (st.isSymbolicLink()) out[p] = { type: 'symlink', mode: 0, link: await readlink(abs) };
      else if (st.isDirectory()) {
        out[p] = { type: 'directory', mode: st.mode & 0o7777, ...(mtimeMs !== undefined ? { mtimeMs } : {}) };
        await walk(abs, p);
      } else out[p] = { type: 'file', mode: st.mode & 0o7777, size: st.size, sha256: await sha256Of(abs), ...(mtimeMs !== undefined ? { mtimeMs } : {}) };
    }
  };
  await walk(root, '');
  return out;
}

/** Every regular file under `root`, recursively (for scanning a repository's bytes). */
export async function allFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      if (e.isDirectory()) await walk(join(dir, e.name));
      else if (e.isFile()) out.push(join(dir, e.name));
    }
  };
  await walk(root);
  return out;
}

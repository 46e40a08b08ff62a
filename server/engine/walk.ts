import { lstat, readdir } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import { basename, join } from 'node:path';
import { throwIfAborted } from './errors.ts';

/**
 * The quick stat pass over a source before any data is read: every entry with its lstat,
 * in a stable order (parents before children, names sorted), so totals are known up front.
 * Symlinks are recorded, never followed. Entries that vanish or cannot be read become errors.
 */
export interface WalkedEntry {
  path: string; // relative, '/'-separated
  abs: string;
  stats: BigIntStats;
}

export interface WalkResult {
  entries: WalkedEntry[];
  errors: { path: string; message: string }[];
}

export async function walkSource(root: string, rootStats: BigIntStats, signal?: AbortSignal): Promise<WalkResult> {
  const errors: WalkResult['errors'] = [];
  if (!rootStats.isDirectory()) {
    return { entries: [{ path: basename(root), abs: root, stats: rootStats }], errors };
  }
  const walkDir = async (abs: string, rel: string): Promise<WalkedEntry[]> => {
    throwIfAborted(signal);
    let names: string[];
    try {
      names = await readdir(abs);
    } catch (err) {
      errors.push({ path: rel || '.', message: (err as Error).message });
      return [];
    }
    names.sort();
    const stats = await Promise.all(
      names.map((name) =>
        lstat(join(abs, name), { bigint: true }).catch((err: Error) => {
          errors.push({ path: rel ? `${rel}/${name}` : name, message: err.message });
          return null;
        }),
      ),
    );
    const children = await Promise.all(
      names.map(async (name, i): Promise<WalkedEntry[]> => {
        const st = stats[i];
        if (!st) return [];
        const entry = { path: rel ? `${rel}/${name}` : name, abs: join(abs, name), stats: st };
        if (st.isDirectory()) return [entry, ...(await walkDir(entry.abs, entry.path))];
        if (st.isFile() || st.isSymbolicLink()) return [entry];
        errors.push({ path: entry.path, message: 'not a regular file, directory or symlink: skipped' });
        return [];
      }),
    );
    return children.flat();
  };
  return { entries: await walkDir(root, ''), errors };
}

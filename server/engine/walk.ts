import type { BigIntStats } from 'node:fs';
import { lstatSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { throwIfAborted } from './errors.ts';

/**
 * The quick stat pass over a source before any data is read: every entry with what a
 * backup needs of its lstat, in a stable order (parents before children, names sorted),
 * so totals are known up front. Symlinks are recorded, never followed. Entries that vanish
 * or cannot be read become errors. Stats are reduced to a few fields at once: a full
 * BigIntStats per entry would cost kilobytes each on a large tree.
 */
export interface WalkedEntry {
  path: string; // relative, '/'-separated
  abs: string;
  kind: 'f' | 'd' | 'l';
  size: number;
  mode: number;
  mtimeNs: string;
  ctimeNs: string;
  ino: string;
}

export interface WalkResult {
  entries: WalkedEntry[];
  errors: { path: string; message: string }[];
}

function kindOf(st: BigIntStats): WalkedEntry['kind'] | null {
  if (st.isFile()) return 'f';
  if (st.isDirectory()) return 'd';
  if (st.isSymbolicLink()) return 'l';
  return null;
}

export function toWalked(path: string, abs: string, st: BigIntStats): WalkedEntry | null {
  const kind = kindOf(st);
  if (!kind) return null;
  return { path, abs, kind, size: kind === 'f' ? Number(st.size) : 0, mode: Number(st.mode), mtimeNs: st.mtimeNs.toString(), ctimeNs: st.ctimeNs.toString(), ino: st.ino.toString() };
}

export async function walkSource(root: string, rootStats: BigIntStats, signal?: AbortSignal): Promise<WalkResult> {
  const errors: WalkResult['errors'] = [];
  const entries: WalkedEntry[] = [];
  if (!rootStats.isDirectory()) {
    const single = toWalked(basename(root), root, rootStats);
    if (single) entries.push(single);
    return { entries, errors };
  }
  // Synchronous lstat is four times faster here than the promise API (no thread-pool round
  // trip per entry); the walk yields to the event loop every few thousand entries instead.
  let sinceYield = 0;
  const walkDir = async (abs: string, rel: string): Promise<void> => {
    throwIfAborted(signal);
    let names: string[];
    try {
      names = readdirSync(abs);
    } catch (err) {
      errors.push({ path: rel || '.', message: (err as Error).message });
      return;
    }
    names.sort();
    for (const name of names) {
      const path = rel ? `${rel}/${name}` : name;
      const full = join(abs, name);
      let st: BigIntStats;
      try {
        st = lstatSync(full, { bigint: true });
      } catch (err) {
        errors.push({ path, message: (err as Error).message });
        continue;
      }
      const entry = toWalked(path, full, st);
      if (!entry) {
        errors.push({ path, message: 'not a regular file, directory or symlink: skipped' });
        continue;
      }
      entries.push(entry);
      if (++sinceYield >= 2000) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
        throwIfAborted(signal);
      }
      if (entry.kind === 'd') await walkDir(full, path);
    }
  };
  await walkDir(root, '');
  return { entries, errors };
}

import { lstat, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';

export type Confinement =
  | { allowed: true; resolved: string; exists: boolean; isDirectory: boolean }
  | { allowed: false };

async function realpathOrNull(p: string): Promise<string | null> {
  try {
    return await realpath(p);
  } catch {
    return null;
  }
}

async function lexists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}

/** The real path of each root (or the normalized path of a root that does not exist yet). */
export async function realRoots(roots: readonly string[]): Promise<string[]> {
  return Promise.all(roots.map(async (r) => (await realpathOrNull(r)) ?? resolve(r)));
}

export function isInside(path: string, root: string): boolean {
  if (path === root) return true;
  return path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Resolves an absolute path the way the filesystem will: `..` removed, the longest existing prefix
 * replaced by its real path (every symlink followed), the missing rest appended. The result must lie
 * inside one of the roots. A dangling symlink or loop on the way counts as outside: where it points
 * cannot be proven to be inside. The answer for an outside path never depends on whether it exists.
 * A path inside an `excluded` directory (the service's own data), or containing one, is refused too:
 * backing it up or restoring over it would expose or overwrite the database and secrets.
 */
export async function confine(requested: string, roots: readonly string[], excluded: readonly string[] = []): Promise<Confinement> {
  if (!isAbsolute(requested) || requested.includes('\0')) return { allowed: false };
  let current = resolve(requested);
  const missing: string[] = [];
  let real = await realpathOrNull(current);
  while (real === null) {
    if (await lexists(current)) return { allowed: false };
    const parent = dirname(current);
    if (parent === current) return { allowed: false };
    missing.unshift(basename(current));
    current = parent;
    real = await realpathOrNull(current);
  }
  const resolved = missing.length ? join(real, ...missing) : real;
  const reals = await realRoots(roots);
  if (!reals.some((root) => isInside(resolved, root))) return { allowed: false };
  for (const dir of await realRoots(excluded)) {
    if (isInside(resolved, dir) || isInside(dir, resolved)) return { allowed: false };
  }
  if (missing.length) return { allowed: true, resolved, exists: false, isDirectory: false };
  const info = await stat(resolved).catch(() => null);
  return { allowed: true, resolved, exists: info !== null, isDirectory: info?.isDirectory() ?? false };
}

/**
 * For a restore of `paths` (relative, '/'-separated) into `target`: the first directory on the way
 * to a requested path that exists under the target as something other than a directory (a symlink
 * above all, which would carry the restore outside the target). Entries inside a requested path are
 * checked by the engine as it creates them; the directories above them are not part of the restore.
 */
export async function blockedAncestor(target: string, paths: readonly string[]): Promise<string | null> {
  const ancestors = new Set<string>();
  for (const p of paths) {
    const parts = p.split('/');
    for (let i = 1; i < parts.length; i++) ancestors.add(parts.slice(0, i).join('/'));
  }
  for (const dir of [...ancestors].sort((a, b) => a.length - b.length)) {
    const info = await lstat(join(target, ...dir.split('/'))).catch(() => null);
    if (info && !info.isDirectory()) return dir;
  }
  return null;
}


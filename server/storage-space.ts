import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseInt10 } from './config-values.ts';

/** Below the smaller of the two, the disk where the repositories live counts as nearly full. */
export interface FreeSpaceThreshold {
  /** STORAGE_MIN_FREE_BYTES, default 1 GiB. */
  minFreeBytes: number;
  /** STORAGE_MIN_FREE_PERCENT, default 5 (of the filesystem's size). */
  minFreePercent: number;
}

export function loadFreeSpaceThreshold(env: NodeJS.ProcessEnv): FreeSpaceThreshold {
  return {
    minFreeBytes: parseInt10('STORAGE_MIN_FREE_BYTES', env.STORAGE_MIN_FREE_BYTES, 1024 ** 3, 0, Number.MAX_SAFE_INTEGER),
    minFreePercent: parseInt10('STORAGE_MIN_FREE_PERCENT', env.STORAGE_MIN_FREE_PERCENT, 5, 0, 100),
  };
}

export interface FreeSpace {
  /** Bytes an unprivileged writer can still use. */
  freeBytes: number;
  totalBytes: number;
  /** The threshold on this filesystem: the smaller of the two settings. */
  limitBytes: number;
  /** Free space is below the threshold. */
  low: boolean;
}

/** Free space of the filesystem holding `dir` (statfs), judged against the threshold. */
export async function freeSpace(dir: string, threshold: FreeSpaceThreshold): Promise<FreeSpace> {
  const s = await statfs(dir);
  const freeBytes = s.bavail * s.bsize;
  const totalBytes = s.blocks * s.bsize;
  const limit = Math.min(threshold.minFreeBytes, (totalBytes * threshold.minFreePercent) / 100);
  return { freeBytes, totalBytes, limitBytes: limit, low: freeBytes < limit };
}

/** Where the local repositories live (DATA_DIR/repositories). */
export function repositoriesDir(dataDir: string): string {
  return join(dataDir, 'repositories');
}

/** Writes, reads back and removes a probe file where the repositories live. */
async function writeProbe(dir: string): Promise<boolean> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `.status-probe-${process.pid}-${randomBytes(4).toString('hex')}`);
  const bytes = randomBytes(16);
  try {
    await writeFile(file, bytes);
    return (await readFile(file)).equals(bytes);
  } finally {
    await rm(file, { force: true });
  }
}

/**
 * The `storage` health check (server/health.ts): the probe file, and the free space with
 * `free_bytes`. Low free space alone fails it as advisory: /status turns degraded, /readyz stays
 * ready (reads and restores still work, and every instance shares the disk).
 */
export async function storageCheck(dataDir: string, threshold: FreeSpaceThreshold): Promise<{ ok: boolean; advisory?: boolean; details: { free_bytes?: number } }> {
  const dir = repositoriesDir(dataDir);
  const written = await writeProbe(dir);
  const space = await freeSpace(dir, threshold).catch(() => null);
  const details = space ? { free_bytes: space.freeBytes } : {};
  if (!written) return { ok: false, details };
  return space?.low ? { ok: false, advisory: true, details } : { ok: true, details };
}

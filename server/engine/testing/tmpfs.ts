import { execFileSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';

/**
 * A small tmpfs mounted at `dir`, to fill a filesystem for real (the tests run as root). Throws,
 * saying what is needed, when it cannot be mounted: such a test fails, it never skips.
 */
export async function mountTmpfs(dir: string, size: string): Promise<() => void> {
  await mkdir(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    throw new Error(`cannot mount a ${size} tmpfs at ${dir} (the disk-full tests need root, or CAP_SYS_ADMIN): ${(err as Error).message}`);
  }
  return () => execFileSync('umount', ['-l', dir]);
}

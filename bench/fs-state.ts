import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * What the file system holds between measured steps, made the same for every tool so that the
 * order the tools run in does not decide their times.
 */

/**
 * Reads every file under `dir` (and so every directory and inode) into the page cache: the tool
 * measured next finds it cached whichever tool went before. (Dropping the caches instead would
 * time the virtual disk, and every other process on the machine with it.)
 */
export function warmTree(dir: string): void {
  execFileSync('sh', ['-c', 'find "$1" -type f -print0 | xargs -0 -r cat > /dev/null', 'warm', dir], { stdio: 'ignore' });
}

/**
 * ext4 without a journal (as on these machines) skips an inode freed in the last 60 s when it
 * allocates one, and in the last 300 s once the inode table block holding it is dirty again
 * (`recently_deleted` in fs/ext4/ialloc.c, RECENTCY_MIN and RECENTCY_DIRTY): a restore dirties
 * those blocks with the inodes it creates, so it meets the longer window. Five minutes and a margin.
 */
const RECENTLY_DELETED_MS = 305_000;
/** When a benchmark last removed restored trees: one file for every benchmark and data directory, as the file system is one. */
const REMOVED_AT = join(tmpdir(), 'backup-bench-trees-removed-at');

/**
 * Restore targets of one run, kept until its end. ext4 scans past each recently freed inode (see
 * RECENTLY_DELETED_MS) when it allocates one, so a restore started right after a tree of many
 * files was removed pays several times the system time: no target is removed between restores,
 * and a run that starts within five minutes of the last removal waits.
 */
export class RestoreTargets {
  private readonly dir: string;
  private n = 0;

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** Removes what an earlier run left, then waits until ext4 allocates inodes as usual again (RECENTLY_DELETED_MS after the last removal). */
  static async open(dir: string): Promise<RestoreTargets> {
    const t = new RestoreTargets(dir);
    if (existsSync(dir)) await t.removeAll();
    const since = existsSync(REMOVED_AT) ? Date.now() - Number(await readFile(REMOVED_AT, 'utf8')) : Infinity;
    if (since < RECENTLY_DELETED_MS) {
      console.log(`waiting ${Math.ceil((RECENTLY_DELETED_MS - since) / 1000)} s: restored trees were removed just now`);
      await new Promise((resolve) => setTimeout(resolve, RECENTLY_DELETED_MS - since));
    }
    await mkdir(dir, { recursive: true });
    return t;
  }

  /** A new, not yet existing directory to restore into. */
  next(label: string): string {
    return join(this.dir, `${label.replace(/[^\w.-]+/g, '_')}-${this.n++}`);
  }

  async removeAll(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
    execFileSync('sync');
    await writeFile(REMOVED_AT, String(Date.now()));
  }
}

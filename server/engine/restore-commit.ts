import { closeSync, fchmodSync, fstatSync, futimesSync, lstatSync, readdirSync, renameSync, rmSync, unlinkSync } from 'node:fs';
import { EngineError } from './errors.ts';
import { TEMP_PREFIX, tempName } from './restore-file.ts';
import { atPath, fdDir } from './source.ts';
import { SyncFs } from './syncfs.ts';
import type { TreeNode } from './tree.ts';

/**
 * Batched durability for a restore. Nothing is fsynced one by one; a batch is committed in three
 * steps: one `syncfs` of every filesystem the batch wrote to (the files' data and metadata reach
 * the disk), then what was hidden is shown: every directory the restore made (under a temp name,
 * its files under their real names inside) whose own entries are written is renamed to its real
 * name, and every file written under a temp name into a directory that was already there is
 * renamed over its real name; then the directories whose subtrees are done get their mode and
 * times (they are closed after the next sync). So a path only ever shows a whole, durable file,
 * also after a crash (what a crash leaves is temp files and temp directories). `finish` commits
 * the last batch and syncs once more, so the renames and directory metadata are durable before
 * the job is done.
 *
 * One syncfs per batch instead of one fsync per file: on small files the fsyncs (each a journal
 * commit) were most of a restore's time; one rename per directory instead of one per file. Directory handles stay open until their batch is
 * committed; a batch is bounded in files and in directories held.
 */
/** A batch is committed when it holds this many files or directories (directories hold a descriptor each). */
const BATCH_FILES = 2048;
const BATCH_DIRS = 256;

/** Files (and symlinks) and bytes that an entry holds. */
export interface Tally {
  files: number;
  bytes: number;
}

type Item =
  | { kind: 'file'; dirFd: number; temp: number; path: Uint8Array; size: number }
  | { kind: 'reveal'; parentFd: number; temp: number; fd: number; path: Uint8Array; tally: Tally }
  | { kind: 'dir'; fd: number; mode: number; mtimeNs: bigint | null; path: Uint8Array };

/** An entry that could not be committed: `lost` is what it held that is not restored after all (none for a directory's metadata). */
export type CommitFailure = (path: Uint8Array, err: unknown, lost: Tally | null) => void;

function lastName(path: Uint8Array): Uint8Array {
  return path.subarray(path.lastIndexOf(0x2f) + 1);
}

/** Removes a temp file, or a temp directory with everything in it (symlinks inside are removed, never followed). */
function removeTemp(dirFd: number, name: Uint8Array): void {
  try {
    rmSync(atPath(dirFd, name), { recursive: true, force: true });
  } catch {}
}

function seconds(ns: bigint): number {
  return Number(ns / 1000n) / 1e6;
}

export class Commits {
  private queue: Item[] = [];
  private files = 0;
  private dirs = 0;
  /** Directories held open (descriptor → device): the filesystems to sync. */
  private readonly open = new Map<number, number>();
  /** Directories committed but not yet closed: closed once the next sync made their changes durable. */
  private closing: number[] = [];
  private committing: Promise<void> = Promise.resolve();
  private readonly failed: CommitFailure;
  private readonly syncFs = new SyncFs();

  /** `failed` is told about an entry that could not be renamed or a directory whose metadata could not be set. */
  constructor(failed: CommitFailure) {
    this.failed = failed;
  }

  /** A directory opened by the restore, on device `dev`. From now on its descriptor is closed here (after `dirDone`, or by `abandon`). */
  opened(fd: number, dev: number): void {
    this.open.set(fd, dev);
  }

  /**
   * A file or symlink written (not synced) under temp name number `temp` in the directory open as
   * `dirFd`, to be renamed to the last name of `path`.
   */
  async file(dirFd: number, temp: number, path: Uint8Array, size: number): Promise<void> {
    this.queue.push({ kind: 'file', dirFd, temp, path, size });
    await this.written();
  }

  /**
   * A file or symlink written under its real name inside a hidden directory: it counts toward
   * the batch. The commit to wait for when it completed one, else null (no promise per file).
   */
  written(): Promise<void> | null {
    return ++this.files >= BATCH_FILES ? this.commit() : null;
  }

  /**
   * A directory the restore made under temp name number `temp` in the one open as `parentFd`
   * (open itself as `fd`), whose own files and symlinks (`tally`) are written: it is renamed to
   * the last name of `path` once its batch is committed.
   */
  async reveal(parentFd: number, temp: number, fd: number, path: Uint8Array, tally: Tally): Promise<void> {
    this.queue.push({ kind: 'reveal', parentFd, temp, fd, path, tally });
    if (++this.dirs >= BATCH_DIRS) await this.commit();
  }

  /** A directory whose subtree is written: its metadata (`meta`, or none) is applied once its batch is committed. */
  async dirDone(fd: number, meta: TreeNode | false, path: Uint8Array): Promise<void> {
    this.queue.push({ kind: 'dir', fd, mode: meta ? meta.mode : 0, mtimeNs: meta ? meta.mtimeNs : null, path });
    if (++this.dirs >= BATCH_DIRS) await this.commit();
  }

  /** Commits what is queued and syncs once more: everything is durable, every directory closed. */
  async finish(): Promise<void> {
    await this.commit();
    try {
      await this.sync();
    } finally {
      this.syncFs.close();
    }
    this.closeCommitted();
  }

  /**
   * After a failure or a cancel (once nothing writes any more): removes every temp file and temp
   * directory (with what it holds) of this process from the directories still held, and closes
   * them. A directory is closed only once what was written into it is shown, so nothing hidden
   * is elsewhere.
   */
  async abandon(): Promise<void> {
    await this.committing;
    this.syncFs.close();
    this.take();
    for (const fd of this.open.keys()) {
      try {
        for (const name of readdirSync(fdDir(fd), { encoding: 'buffer' })) {
          if (name.subarray(0, TEMP_PREFIX.length).toString('latin1') === TEMP_PREFIX) removeTemp(fd, name);
        }
      } catch {}
      closeSync(fd);
    }
    this.open.clear();
    this.closing = [];
  }

  private take(): Item[] {
    const items = this.queue;
    this.queue = [];
    this.files = 0;
    this.dirs = 0;
    return items;
  }

  /** One commit at a time, in order; the caller waits for its own. */
  private commit(): Promise<void> {
    const items = this.take();
    const run = this.committing.then(() => this.apply(items));
    this.committing = run.catch(() => {});
    return run;
  }

  private async apply(items: Item[]): Promise<void> {
    if (items.length === 0) return;
    try {
      await this.sync();
    } catch (err) {
      this.queue.unshift(...items); // left for abandon
      throw err;
    }
    this.closeCommitted();
    for (const item of items) {
      if (item.kind === 'reveal') {
        const temp = tempName(item.temp);
        try {
          // The name must still be the directory the restore holds: what was swapped in is never moved into place (nor removed).
          const st = lstatSync(atPath(item.parentFd, temp));
          const own = fstatSync(item.fd);
          if (st.ino !== own.ino || st.dev !== own.dev) throw Object.assign(new Error('replaced during the restore'), { code: 'ENOTDIR' });
          try {
            renameSync(atPath(item.parentFd, temp), atPath(item.parentFd, lastName(item.path)));
          } catch (err) {
            removeTemp(item.parentFd, temp);
            throw err;
          }
        } catch (err) {
          this.failed(item.path, err, item.tally);
        }
        continue;
      }
      if (item.kind === 'file') {
        const temp = atPath(item.dirFd, tempName(item.temp));
        try {
          renameSync(temp, atPath(item.dirFd, lastName(item.path)));
        } catch (err) {
          try {
            unlinkSync(temp);
          } catch {}
          this.failed(item.path, err, { files: 1, bytes: item.size });
        }
        continue;
      }
      try {
        if (item.mtimeNs !== null) {
          fchmodSync(item.fd, item.mode & 0o7777);
          futimesSync(item.fd, seconds(item.mtimeNs), seconds(item.mtimeNs));
        }
      } catch (err) {
        this.failed(item.path, err, null);
      }
      this.closing.push(item.fd);
    }
  }

  private closeCommitted(): void {
    for (const fd of this.closing) {
      this.open.delete(fd);
      closeSync(fd);
    }
    this.closing = [];
  }

  /**
   * syncfs(2) of every filesystem the restore holds a directory on (syncfs.ts). The paths name
   * our own descriptors, so nothing swapped in the target is followed.
   */
  private async sync(): Promise<void> {
    const byDevice = new Map<number, number>();
    for (const [fd, dev] of this.open) if (!byDevice.has(dev)) byDevice.set(dev, fd);
    if (byDevice.size === 0) return;
    try {
      await this.syncFs.run([...byDevice.values()].map((fd) => `/proc/${process.pid}/fd/${fd}`));
    } catch (err) {
      const message = (err as Error).message;
      if (/no space|quota/i.test(message)) throw new EngineError('STORAGE_FULL', 'no space is left on the restore target', {}, { cause: err });
      throw new EngineError('INTERNAL_ERROR', `the restored files could not be made durable (sync --file-system): ${message}`, {}, { cause: err });
    }
  }
}

import { closeSync, fstatSync, openSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToText } from '../escaped-path.ts';
import type { BlobLocation } from './blob-table.ts';
import { ChunkReader } from './chunk-reader.ts';
import { toHex } from './codec.ts';
import { EngineError, cancellable, errnoCode, fromPostedErrno, fromStorage, fromTargetFs, observed, throwIfAborted, whenAborted } from './errors.ts';
import { WORKERS_BESIDE_MAIN, WorkerPool } from './pool.ts';
import { ProgressReporter } from './progress.ts';
import type { Repository } from './repository.ts';
import { Commits } from './restore-commit.ts';
import type { Tally } from './restore-commit.ts';
import { existing, existingSync, isSmall, latin1, newTemp, sameContent, seconds, tempName, writeFile, writeLink } from './restore-file.ts';
import type { EntryDir, FileWriteContext } from './restore-file.ts';
import { WRITE_BATCH_FILES, type SmallFile } from './restore-write.ts';
import type { RunRead } from './run-reader.ts';
import { ALL, below, select } from './select.ts';
import type { Selection } from './select.ts';
import { childPath } from './snapshot.ts';
import { DIR_FLAGS, atPath, openFd } from './source.ts';
import { SnapshotTrees } from './trees.ts';
import { TreeCursor, compareNames, validName } from './tree.ts';
import type { TreeNode } from './tree.ts';
import type { CompressionCode, Overwrite, Progress, Warnings } from './types.ts';
import { WarningList } from './warnings.ts';
import type { WriteResult } from './worker.ts';

export interface RestoreOptions {
  target: string;
  /** Byte paths relative to the source ('/'-separated); a directory stands for its subtree. None: everything. */
  paths?: Uint8Array[];
  overwrite: Overwrite;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** For tests that change the target mid-restore: called before each entry is created. */
  beforeCreate?: (path: Uint8Array, type: 'file' | 'directory' | 'symlink') => void | Promise<void>;
}

export interface RestoreResult {
  /** Regular files and symlinks written. */
  filesRestored: number;
  /** Regular files and symlinks left as they were (per `overwrite`). */
  filesSkipped: number;
  sizeBytes: number;
  warnings: Warnings;
}

/**
 * Entries being written at once. Small files (one chunk or none) and symlinks cost a record and
 * their chunk while in flight (the chunk budget bounds the bytes), and many of them in flight are
 * what lets their reads be grouped into runs (run-reader.ts); two of the writer's messages, so
 * that it finds the next one queued (pool.ts). A multi-chunk file also holds a descriptor and its
 * read-ahead, so fewer of those run at once.
 */
const SMALL_IN_FLIGHT = 2 * WRITE_BATCH_FILES;
const LARGE_IN_FLIGHT = 16;
const TYPE_NAMES = { f: 'file', d: 'directory', l: 'symlink' } as const;

/**
 * A directory of the restore as the walk sees it. One that was there is opened by the main thread
 * at once. One the restore makes is made by the writer, in order with the files written into it
 * (only one thread creates entries), while the walk goes on into it; the main thread opens it
 * when the writer answers, checking it is the directory the writer made.
 */
class Dir implements EntryDir {
  /** Open here; -1 until `ready`. */
  fd = -1;
  /** The writer's number for a directory it made (and holds open until released). */
  made: number | undefined;
  /** Resolves once `fd` is open; rejects with why the directory is not restored. */
  ready: Promise<void> = Promise.resolve();
  /** It could not be made or opened: its entries fail without a report each. */
  failed = false;
  /** Because one above it failed (reported there). */
  above = false;
  /** `ready` has settled. */
  settled = true;

  /** Waits until it is open here, or why not; `flush` sends its making to the writer if it still waits for files to go with. */
  async opened(flush: () => void): Promise<void> {
    if (!this.settled) flush();
    await this.ready;
  }

  static opened(fd: number): Dir {
    const dir = new Dir();
    dir.fd = fd;
    return dir;
  }
}

/** A counting semaphore whose waits end when the signal aborts. */
class Slots {
  private free: number;
  private readonly waiters: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  /** Takes one if one is free now (no promise made). */
  tryTake(): boolean {
    if (this.free === 0) return false;
    this.free--;
    return true;
  }
  async take(signal: AbortSignal): Promise<void> {
    while (this.free === 0) {
      throwIfAborted(signal);
      await new Promise<void>((resolve) => {
        const forget = whenAborted(signal, resolve);
        this.waiters.push(() => {
          forget();
          resolve();
        });
      });
    }
    this.free--;
  }
  give(): void {
    this.free++;
    this.waiters.shift()?.();
  }
}

/**
 * The entries of one directory still being written: a count and one waiter, rather than a
 * promise kept per entry until the directory is done (thousands of those outlived the young
 * generation's collections).
 */
class Entries {
  private left = 0;
  private waiter: (() => void) | null = null;
  add(): void {
    this.left++;
  }
  done(): void {
    if (--this.left === 0 && this.waiter) this.waiter();
  }
  /** Resolves once every entry added is done. */
  settled(): Promise<void> | null {
    if (this.left === 0) return null;
    return new Promise((resolve) => (this.waiter = resolve));
  }
}

/**
 * A small file on the common path: in a directory the restore made (nothing there to look at),
 * its one chunk in the index and budget free. The run reader settles this one record (the
 * writer wrote the file, or why not), instead of three async functions' frames and their
 * promises per file, which were most of what the main thread allocated per file and, with 128
 * files in flight, what outlived its young generation's collections. It is its own location
 * (the index's answer is read and dropped, its pack name shared with the file before), and
 * it keeps no node of the tree.
 */
class SmallEntry implements RunRead, BlobLocation {
  readonly id: Uint8Array;
  readonly type = 'data' as const;
  readonly encrypted: boolean;
  readonly comp: CompressionCode;
  readonly pack: string;
  readonly offset: number;
  readonly length: number;
  readonly rawLength: number;
  readonly file: SmallFile;
  readonly job: RestoreJob;
  readonly dir: Dir;
  readonly rel: Uint8Array;
  readonly size: number;
  readonly tally: Tally;
  readonly group: Entries;
  private settled = false;

  constructor(job: RestoreJob, loc: BlobLocation, pack: string, file: SmallFile, dir: Dir, rel: Uint8Array, size: number, tally: Tally, group: Entries) {
    this.id = loc.id;
    this.encrypted = loc.encrypted;
    this.comp = loc.comp;
    this.pack = pack;
    this.offset = loc.offset;
    this.length = loc.length;
    this.rawLength = loc.rawLength;
    this.job = job;
    this.file = file;
    this.dir = dir;
    this.rel = rel;
    this.size = size;
    this.tally = tally;
    this.group = group;
  }

  get loc(): BlobLocation {
    return this;
  }

  /** Its path, for a failure. */
  path(): Uint8Array {
    return childPath(this.rel, Buffer.from(this.file.name, 'latin1'));
  }

  resolve(data: Uint8Array | null): void {
    if (this.settled) return;
    this.settled = true;
    this.job.smallWritten(this, data);
  }

  reject(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.job.smallFailed(this, err);
  }
}

/**
 * A stored tree's nodes, each built only when the walk reaches it, checked as decodeTree checks
 * them (names safe and in order). Decoded all at once, a directory's nodes lived until its whole
 * subtree was walked, with an array of their own per name, id and chunk list: about a third of
 * what the main thread promoted out of its young generation. Here names and ids are views of the
 * tree's plaintext (a name sent to a worker is copied first, restore-file.ts), the node's ctime
 * and inode are not read, its sha256 only when `sums` (an `if_changed` restore compares it).
 */
function* storedNodes(plain: Uint8Array, what: string, sums: boolean): Generator<TreeNode> {
  const c = new TreeCursor(plain, what);
  const b = c.bytes;
  let previous: Uint8Array | null = null;
  while (c.next()) {
    const name = b.subarray(c.nameAt, c.nameAt + c.nameLength);
    if (!validName(name)) throw c.bad('an entry has an unsafe name');
    if (previous && compareNames(previous, name) >= 0) throw c.bad('entries are not in name order');
    previous = name;
    const node: TreeNode = { name, type: c.type, mode: c.mode, mtimeNs: b.readBigInt64LE(c.statAt), ctimeNs: 0n, ino: 0n, size: 0 };
    if (c.type === 'f') {
      node.size = c.size;
      if (sums) node.sha256 = b.subarray(c.sha256At, c.sha256At + 32);
      const chunks: Uint8Array[] = [];
      for (let k = 0; k < c.chunkCount; k++) chunks.push(b.subarray(c.chunksAt + 32 * k, c.chunksAt + 32 * k + 32));
      node.chunks = chunks;
    } else if (c.type === 'd') {
      node.subtree = b.subarray(c.subtreeAt, c.subtreeAt + 32);
    } else {
      node.link = b.subarray(c.linkAt, c.linkAt + c.linkLength);
    }
    yield node;
  }
}

/**
 * Restores a snapshot (or the subtrees named by `paths`) into `target`, streaming the trees
 * directory by directory. Everything is created relative to directory handles the restore
 * opened itself (see restore-file.ts); a directory's mode and times are applied once, when its
 * subtree is done. What fails the job: corrupt data (CORRUPT_DATA), a full target (STORAGE_FULL),
 * something in the target that is in the way (RESTORE_CONFLICT), the repository's storage. An
 * entry that cannot be created because the target changed under the restore becomes a warning.
 */
export async function restore(repo: Repository, snapshotId: string, opts: RestoreOptions): Promise<RestoreResult> {
  repo.assertOpen();
  // The main thread walks the trees, reads the packs and makes the directories, and the kernel's
  // writeback needs CPU too: on 2 cores a second worker sat idle two thirds of the time (15–20 MB).
  const pool = new WorkerPool(repo.key, WORKERS_BESIDE_MAIN);
  const halt = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, halt.signal]) : halt.signal;
  const job = new RestoreJob(repo, opts, pool, signal, halt);
  try {
    return await cancellable(opts.signal, () => pool.close(), () => job.run(snapshotId));
  } catch (err) {
    throw fromTargetFs(fromStorage(err));
  } finally {
    pool.close();
  }
}

class RestoreJob {
  private readonly repo: Repository;
  private readonly opts: RestoreOptions;
  private readonly signal: AbortSignal;
  private readonly halt: AbortController;
  private readonly reader: ChunkReader;
  private readonly pool: WorkerPool;
  private readonly files: FileWriteContext;
  private readonly flushWrites: () => void;
  private readonly stopWorkers: () => Promise<void>;
  private readonly progress: ProgressReporter;
  private readonly warnings = new WarningList();
  private readonly smallSlots = new Slots(SMALL_IN_FLIGHT);
  private readonly largeSlots = new Slots(LARGE_IN_FLIGHT);
  private readonly commits = new Commits((path, err, lost) => {
    if (lost) {
      this.result.filesRestored -= lost.files;
      this.result.sizeBytes -= lost.bytes;
    }
    this.failed(path, err);
  });
  private trees!: SnapshotTrees;
  private fatal: unknown = null;
  /** The pack of the last small file read: the next one's, most often (one string shared). */
  private lastPack = '';
  private readonly result = { filesRestored: 0, filesSkipped: 0, sizeBytes: 0 };

  constructor(repo: Repository, opts: RestoreOptions, pool: WorkerPool, signal: AbortSignal, halt: AbortController) {
    this.repo = repo;
    this.opts = opts;
    this.signal = signal;
    this.halt = halt;
    this.reader = new ChunkReader(repo, pool, signal);
    this.pool = pool;
    this.flushWrites = () => pool.flushWrites();
    this.stopWorkers = () => pool.stopped();
    this.progress = new ProgressReporter(opts.onProgress);
    this.files = {
      reader: this.reader,
      progress: this.progress,
      signal,
      writeSmall: async (file: SmallFile, data: Uint8Array) => {
        const r = await pool.write({ op: 'file', file, data }, null, 1);
        if (r && 'error' in r) throw fromPostedErrno(r.error);
      },
    };
  }

  /** A failure that ends the job: the first one is kept and everything else winds down. */
  private stop(err: unknown): void {
    this.fatal ??= err;
    this.halt.abort();
  }

  /** Classifies a failure to create one entry: the job fails, or the entry is reported and skipped. */
  private failed(path: Uint8Array, err: unknown): void {
    const mapped = fromTargetFs(fromStorage(err));
    if (mapped instanceof EngineError) {
      if (mapped.code === 'CORRUPT_DATA') {
        this.stop(new EngineError('CORRUPT_DATA', `${pathToText(path)}: ${mapped.message}`, { ...mapped.details, path: pathToText(path) }));
      } else this.stop(mapped);
    } else if (errnoCode(err) === undefined) this.stop(err);
    else if (path.length === 0) this.stop(new EngineError('RESTORE_CONFLICT', `the target cannot be written: ${(err as Error).message}`, {}, { cause: err }));
    else this.warnings.add(path, `not restored: ${(err as Error).message}`);
  }

  async run(snapshotId: string): Promise<RestoreResult> {
    this.trees = await SnapshotTrees.open(this.repo, snapshotId, this.signal);
    const root = await this.trees.root();
    const selection = await select(this.trees, root, this.opts.paths);
    const target = resolve(this.opts.target);
    let created = false;
    let fd: number;
    try {
      try {
        await mkdir(target);
        created = true;
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') created = (await mkdir(target, { recursive: true })) !== undefined;
        else if (errnoCode(err) !== 'EEXIST') throw err;
      }
      fd = await openFd(target, DIR_FLAGS);
      this.commits.opened(fd, fstatSync(fd).dev);
    } catch (err) {
      const mapped = fromTargetFs(err);
      if (mapped instanceof EngineError) throw mapped;
      throw new EngineError('RESTORE_CONFLICT', `the target cannot be used: ${(err as Error).message}`, { path: target }, { cause: err });
    }
    this.progress.emit();
    // The walk also announces the chunks to read, in the restore's order, unless files may be left as they are.
    const plan = (created || this.opts.overwrite === 'always') && this.reader.expects;
    void this.count(root.nodes, selection, plan).then(
      ({ files, bytes }) => this.progress.setTotals(files, bytes),
      () => {},
    );
    try {
      const done = await this.dir(Dir.opened(fd), new Uint8Array(0), root.nodes, selection, created, false, null);
      await done();
      if (!this.fatal && !this.signal.aborted) await this.commits.finish();
    } catch (err) {
      this.stop(err);
    }
    if (this.fatal || this.signal.aborted) {
      await this.stopWorkers(); // a worker may be writing a small file: it stops first, then its temp file goes
      await this.commits.abandon();
      if (this.fatal) throw this.fatal;
      throwIfAborted(this.signal);
    }
    this.progress.finish();
    return { ...this.result, warnings: this.warnings.result() };
  }

  /**
   * Regular files and bytes the selection holds (a walk over the trees only), for the progress
   * totals; with `plan`, tells the reader which chunks the restore will read, in its order. A
   * stored tree is read with a cursor, not decoded: the restore's own walk decodes each once, and
   * a second set of nodes was most of what the main thread left to the collector.
   */
  private async count(nodes: TreeNode[], selection: Selection, plan: boolean): Promise<{ files: number; bytes: number }> {
    let files = 0;
    let bytes = 0;
    for (const n of nodes) {
      const sel = below(selection, n.name);
      if (sel === undefined) continue;
      if (n.type === 'f' && sel === ALL) {
        files++;
        bytes += n.size;
        if (plan && n.chunks) this.reader.expect(n.chunks);
      } else if (n.type === 'd') {
        const stored = n.subtree ? await this.trees.stored(n.subtree) : null; // none in a format-1 snapshot
        const sub = stored ? await this.countStored(stored.plain, sel, plan) : await this.count((await this.trees.children(n)).nodes, sel, plan);
        files += sub.files;
        bytes += sub.bytes;
      }
    }
    return { files, bytes };
  }

  /** Like count, over a stored tree. */
  private async countStored(plain: Uint8Array, selection: Selection, plan: boolean): Promise<{ files: number; bytes: number }> {
    const c = new TreeCursor(plain, 'tree');
    const b = c.bytes;
    let files = 0;
    let bytes = 0;
    while (c.next()) {
      const sel = selection === ALL ? ALL : below(selection, b.subarray(c.nameAt, c.nameAt + c.nameLength));
      if (sel === undefined) continue;
      if (c.type === 'f' && sel === ALL) {
        files++;
        bytes += c.size;
        if (plan && c.chunkCount > 0) {
          const ids: Uint8Array[] = [];
          for (let k = 0; k < c.chunkCount; k++) ids.push(b.subarray(c.chunksAt + 32 * k, c.chunksAt + 32 * k + 32));
          this.reader.expect(ids);
        }
      } else if (c.type === 'd') {
        const stored = await this.trees.stored(new Uint8Array(b.subarray(c.subtreeAt, c.subtreeAt + 32)));
        const sub = await this.countStored(stored!.plain, sel, plan);
        files += sub.files;
        bytes += sub.bytes;
      }
    }
    return { files, bytes };
  }

  /**
   * Restores the selected entries of one directory (closed here once its subtree is done);
   * returns once its work is scheduled. `created`: the restore made this directory, so nothing in
   * it can be in the way. `meta`: the directory's own mode and times, applied last. `hidden`: the
   * restore made it under temp name number `temp` in `parent`; its entries get their real names,
   * and it is shown under its own once they are durable.
   */
  private async dir(
    dir: Dir,
    rel: Uint8Array,
    nodes: Iterable<TreeNode>,
    selection: Selection,
    created: boolean,
    meta: TreeNode | false,
    hidden: { parent: Dir; temp: number } | null,
  ): Promise<() => Promise<void>> {
    const own = new Entries();
    const subdirs: Promise<void>[] = [];
    const tally: Tally = { files: 0, bytes: 0 };
    try {
      for (const node of nodes) {
        if (this.signal.aborted || dir.failed) break;
        const sel = below(selection, node.name);
        if (sel === undefined) continue;
        if (this.opts.beforeCreate) {
          await dir.opened(this.flushWrites).catch(() => {}); // the hook sees the directory the entry goes into
          await this.opts.beforeCreate(childPath(rel, node.name), TYPE_NAMES[node.type]);
        }
        if (node.type === 'd') {
          const path = childPath(rel, node.name);
          const children = await this.entriesOf(node);
          const sub = this.openDir(dir, node, path, created);
          if (!sub) continue;
          const made = sub.made !== undefined;
          const done = await this.dir(sub, path, children, sel, made, sel === ALL ? node : false, made ? { parent: dir, temp: sub.made! } : null);
          subdirs.push(observed(done()));
        } else if (sel === ALL) {
          const slots = (node.chunks?.length ?? 0) > 1 ? this.largeSlots : this.smallSlots;
          if (!slots.tryTake()) await slots.take(this.signal);
          if (this.signal.aborted) {
            slots.give();
            break;
          }
          own.add();
          const loc = hidden && node.chunks?.length === 1 ? this.reader.find(node.chunks[0]!) : undefined;
          if (loc && this.reader.budget.tryAcquire(loc.rawLength)) {
            if (loc.pack !== this.lastPack) this.lastPack = loc.pack;
            const file: SmallFile = { dirFd: dir.fd, made: dir.made, name: latin1(node.name), mode: node.mode, mtime: seconds(node.mtimeNs) };
            this.reader.submitSmall(new SmallEntry(this, loc, this.lastPack, file, dir, rel, node.size, tally, own));
          } else void this.entry(dir, node, rel, created, hidden ? tally : null, slots, own);
        }
      }
    } catch (err) {
      this.stop(err);
    }
    const finished = (async () => {
      await own.settled();
      // Nothing more is written into it by the writer: its descriptor there is closed (in order, after the entries made in it).
      if (dir.made !== undefined) void this.pool.write({ op: 'release', made: dir.made }).catch(() => {});
      let there = true;
      try {
        await dir.opened(this.flushWrites);
      } catch (err) {
        there = false;
        if (!dir.above && !this.signal.aborted) this.dirFailed(rel, err);
        // What was written into it is not shown.
        this.result.filesRestored -= tally.files;
        this.result.sizeBytes -= tally.bytes;
      }
      // Shown once its own entries are durable; before its parent's metadata, which the rename would change.
      if (there && hidden && !this.signal.aborted) await this.commits.reveal(hidden.parent.fd, hidden.temp, dir.fd, rel, tally).catch((err: unknown) => this.stop(err));
      await Promise.allSettled(subdirs);
      // Its metadata is applied, and it is closed, once the entries written into it are committed.
      if (there && !this.signal.aborted) await this.commits.dirDone(dir.fd, meta, rel).catch((err: unknown) => this.stop(err));
    })();
    return () => finished;
  }

  /** The entries of a directory node, one at a time from its stored tree (see storedNodes), or a format-1 snapshot's nodes. */
  private async entriesOf(node: TreeNode): Promise<Iterable<TreeNode>> {
    const stored = node.subtree ? await this.trees.stored(node.subtree) : null;
    if (!stored) return (await this.trees.children(node)).nodes;
    return storedNodes(stored.plain, `tree ${toHex(node.subtree!)}`, this.opts.overwrite === 'if_changed');
  }

  /** A small file of the common path is written (`data` null), or its chunk was read on its own (the writer gets its plaintext). */
  smallWritten(e: SmallEntry, data: Uint8Array | null): void {
    if (data) {
      void this.smallAlone(e, data);
      return;
    }
    this.reader.budget.release(e.loc.rawLength);
    this.progress.add(1, e.loc.rawLength);
    this.result.sizeBytes += e.size;
    this.result.filesRestored++;
    e.tally.files++;
    e.tally.bytes += e.size;
    const committing = this.commits.written();
    if (!committing) this.smallFreed(e);
    else
      committing.then(
        () => this.smallFreed(e),
        (err: unknown) => this.smallFailed(e, err, false),
      );
  }

  private async smallAlone(e: SmallEntry, data: Uint8Array): Promise<void> {
    try {
      throwIfAborted(this.signal);
      await this.files.writeSmall(e.file, data);
    } catch (err) {
      this.smallFailed(e, err);
      return;
    }
    this.smallWritten(e, null);
  }

  /** A small file of the common path failed (`budget`: it still holds its budget): reported as entry() reports it. */
  smallFailed(e: SmallEntry, err: unknown, budget = true): void {
    if (budget) this.reader.budget.release(e.loc.rawLength);
    if (!e.dir.failed) this.failed(e.path(), err);
    this.smallFreed(e);
  }

  private smallFreed(e: SmallEntry): void {
    this.smallSlots.give();
    e.group.done();
  }

  /** A directory that could not be made or opened: a warning when the target changed under the restore. */
  private dirFailed(path: Uint8Array, err: unknown): void {
    if (errnoCode(err) === 'ELOOP' || errnoCode(err) === 'ENOTDIR' || errnoCode(err) === 'EEXIST') {
      this.warnings.add(path, 'replaced during the restore: its contents are not restored');
    } else this.failed(path, err);
  }

  /**
   * Opens a directory that exists inside `parent` (synchronous calls: a thread-pool round trip
   * each would hold up the walk), or has the writer make it there hidden under a temp name,
   * whose number is its `made` (see `dir`); null when neither was possible (warning).
   */
  private openDir(parent: Dir, node: TreeNode, path: Uint8Array, parentCreated: boolean): Dir | null {
    if (parentCreated) return this.makeDir(parent);
    try {
      const there = existingSync(parent.fd, node.name);
      if (!there) return this.makeDir(parent);
      if (!there.isDirectory()) throw new EngineError('RESTORE_CONFLICT', `${pathToText(path)} exists and is not a directory`, { path: pathToText(path) });
      const fd = openSync(atPath(parent.fd, node.name), DIR_FLAGS);
      const st = fstatSync(fd);
      if (!st.isDirectory()) {
        closeSync(fd);
        throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
      }
      this.commits.opened(fd, st.dev);
      return Dir.opened(fd);
    } catch (err) {
      this.dirFailed(path, err);
      return null;
    }
  }

  /** Has the writer make a directory in `parent` under a new temp name, and opens it here once made. */
  private makeDir(parent: Dir): Dir {
    const dir = new Dir();
    dir.settled = false;
    const made = newTemp();
    dir.made = made;
    const name = tempName(made);
    const asked = this.pool.write(parent.made === undefined ? { op: 'dir', made, parentFd: parent.fd, name } : { op: 'dir', made, parentFd: -1, parentMade: parent.made, name });
    dir.ready = asked.then((r: WriteResult) => {
      // The parent's own answer came first (in order): whether it is there is known.
      if (parent.failed) {
        dir.failed = dir.above = true;
        throw new Error('its parent is not restored');
      }
      try {
        if (r && 'error' in r) throw fromPostedErrno(r.error);
        const { ino, dev } = r as { ino: number; dev: number };
        const fd = openSync(atPath(parent.fd, name), DIR_FLAGS);
        const st = fstatSync(fd);
        if (st.ino !== ino || st.dev !== dev) {
          closeSync(fd);
          throw Object.assign(new Error('replaced during the restore'), { code: 'ENOTDIR' });
        }
        this.commits.opened(fd, st.dev);
        dir.fd = fd;
      } catch (err) {
        dir.failed = true;
        throw err;
      }
    });
    dir.ready.then(
      () => (dir.settled = true),
      () => (dir.settled = true), // reported when its subtree is done
    );
    return dir;
  }

  /**
   * Restores one file or symlink, unless `overwrite` keeps what is there. In a hidden directory
   * (`tally`, which counts what it holds) under its real name, else under a temp name of its own.
   */
  private async entry(dir: Dir, node: TreeNode, rel: Uint8Array, parentCreated: boolean, tally: Tally | null, slots: Slots, group: Entries): Promise<void> {
    const dirFd = dir.fd; // open here when the restore did not make the directory
    try {
      const st = parentCreated ? null : await existing(dirFd, node.name);
      if (st) {
        const path = childPath(rel, node.name);
        if (st.isDirectory()) throw new EngineError('RESTORE_CONFLICT', `${pathToText(path)} exists as a directory`, { path: pathToText(path) });
        const keep =
          this.opts.overwrite === 'never' ||
          (this.opts.overwrite === 'if_changed' && node.type === 'f' && (await sameContent(dirFd, node.name, node, st)));
        if (keep) {
          this.result.filesSkipped++;
          if (node.type === 'f') this.progress.add(1, node.size);
          return;
        }
      }
      const temp = tally ? null : newTemp();
      const name = temp === null ? node.name : tempName(temp);
      // What the writer does not write needs the directory open here.
      if (node.type === 'l' || !isSmall(node)) await dir.opened(this.flushWrites);
      if (node.type === 'l') await writeLink(dir.fd, node, name);
      else await writeFile(this.files, dir, node, name);
      const size = node.type === 'f' ? node.size : 0;
      if (node.type === 'f') this.progress.add(1, 0);
      this.result.sizeBytes += size;
      this.result.filesRestored++;
      if (tally) {
        tally.files++;
        tally.bytes += size;
        const committing = this.commits.written();
        if (committing) await committing;
      } else await this.commits.file(dirFd, temp!, childPath(rel, node.name), size);
    } catch (err) {
      if (!dir.failed) this.failed(childPath(rel, node.name), err);
    } finally {
      slots.give();
      group.done();
    }
  }
}

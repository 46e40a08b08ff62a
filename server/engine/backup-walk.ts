import { createHash } from 'node:crypto';
import { closeSync } from 'node:fs';
import type { PathLike } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import type { BlobWriter, StoredFile } from './blob-writer.ts';
import { bytesEqual, toHex } from './codec.ts';
import { EngineError, observed, throwIfAborted } from './errors.ts';
import { chunkFile } from './file-read.ts';
import type { ProgressReporter } from './progress.ts';
import type { Repository } from './repository.ts';
import { childPath, toEntryRecord } from './snapshot.ts';
import { FILE_FLAGS, atPath, changedSinceWalk, describeKind, fstatOpened, openDir, openFailure } from './source.ts';
import type { Dir, SnapshotTrees, StoredTree } from './trees.ts';
import { TreeCursor, compareNames, decodeTree, encodeTree } from './tree.ts';
import type { TreeNode } from './tree.ts';
import type { EntryRecord } from './types.ts';
import type { WarningList } from './warnings.ts';
import { ListingCursor, decodeListing } from './listing.ts';
import type { DirEntry } from './listing.ts';
import type { DirListing, DirRequest } from './worker.ts';

/**
 * A backup's walk, directory by directory, depth first. Each directory is listed (by a worker,
 * through the handle of its parent), its files are handed to the writer, its subdirectories are
 * walked in turn; its tree is encoded and stored once all of its entries are, and its entries go
 * out to `onEntries` then. A directory's walk returns as soon as its work is scheduled, so many
 * small files of neighbouring directories are in flight at once; what is held is bounded by the
 * writer's budgets, the directories being finished, and the depth of the tree.
 *
 * With a parent snapshot, a file whose size, mtime, ctime and inode are unchanged keeps its
 * chunk list without being read, and a directory whose tree comes out byte-identical keeps its
 * parent's tree id without storing anything. A directory whose listing matches its parent tree
 * entry for entry (compared as stored, without decoding either) and whose subdirectories all keep
 * theirs keeps its tree id without an object per entry.
 */
export interface WalkHooks {
  /** For tests that change the source mid-backup: called after an entry was listed, before it is opened. */
  beforeOpen?: (path: Uint8Array, type: 'file' | 'directory') => void | Promise<void>;
}

export interface WalkContext {
  repo: Repository;
  writer: BlobWriter;
  listDir: (req: DirRequest) => Promise<DirListing>;
  /** The counting scan's listing of a directory (by device and inode) when it holds one. */
  scanned: (dir: { dev: bigint; ino: bigint }) => Promise<Uint8Array | null>;
  parent: SnapshotTrees | null;
  encryption: boolean;
  warnings: WarningList;
  progress: ProgressReporter;
  /** Receives each directory's entries once it is stored; null when nobody listens. */
  emit: ((entries: EntryRecord[]) => Promise<void>) | null;
  signal: AbortSignal | undefined;
  hooks: WalkHooks;
}

/** Files up to this size are read and encoded whole by a worker (never above the minimum chunk size). */
const SMALL_FILE = 256 * 1024;

type Pending<T> = () => Promise<T>;

/** A directory's version in the parent snapshot: as stored (format 2, decoded only when needed), or decoded. */
type Earlier = (StoredTree & { nodes?: TreeNode[] }) | Dir;

/** A listed directory: its handle, and its listing as the worker or the scan encoded it (or its entries). */
export type Listing = { fd: number } & ({ data: Uint8Array } | { entries: DirEntry[] });

type Subdir = { earlier: Earlier | null; sub: Listing | { error: string; code?: string } };

/** Subdirectories of one directory opened and listed ahead of the walk. */
const LIST_AHEAD = 16;

/** Whether a parent-snapshot node has the metadata the walk sees now (its name matched already). */
function sameMeta(prev: TreeNode, e: DirEntry): boolean {
  return prev.mode === e.mode && prev.mtimeNs === e.mtimeNs && prev.ctimeNs === e.ctimeNs && prev.ino === e.ino;
}

function nameKey(name: Uint8Array): string {
  return Buffer.from(name.buffer, name.byteOffset, name.byteLength).toString('latin1');
}

/** An earlier directory's nodes, decoded once when first needed. */
function nodesOf(e: Earlier): TreeNode[] {
  return (e.nodes ??= decodeTree(e.plain!, `tree ${toHex(e.id!)}`));
}

function corrupt(err: unknown): boolean {
  return err instanceof EngineError && err.code === 'CORRUPT_DATA';
}

/** What a listing that matches its parent tree entry for entry holds (its subdirectories to walk), without an object per entry. */
interface Unchanged {
  /** Regular files and symlinks, and the regular files' bytes. */
  files: number;
  regular: number;
  bytes: number;
  subdirs: { name: Uint8Array; dev: bigint; ino: bigint; subtree: Uint8Array }[];
}

/**
 * The listing compared with the parent tree as stored: the same names, types, modes, times and
 * inodes, files of the same size whose chunks are all usable, the same link targets; null at the
 * first difference (the directory then takes the entry-by-entry way).
 */
function unchangedListing(listing: Uint8Array, earlier: StoredTree, usable: (id: Uint8Array) => boolean): Unchanged | null {
  const l = new ListingCursor(listing);
  const t = new TreeCursor(earlier.plain, `tree ${toHex(earlier.id)}`);
  const lb = l.bytes;
  const tb = t.bytes;
  const out: Unchanged = { files: 0, regular: 0, bytes: 0, subdirs: [] };
  while (l.next()) {
    if (!t.next() || l.error || l.mode !== t.mode || l.nameLength !== t.nameLength) return null;
    if (lb.compare(tb, t.nameAt, t.nameAt + t.nameLength, l.nameAt, l.nameAt + l.nameLength) !== 0) return null;
    if (lb.compare(tb, t.statAt, t.statAt + 24, l.statAt, l.statAt + 24) !== 0) return null;
    if (l.kind === 'f' && t.type === 'f') {
      if (l.size !== t.size) return null;
      for (let c = 0; c < t.chunkCount; c++) if (!usable(tb.subarray(t.chunksAt + 32 * c, t.chunksAt + 32 * c + 32))) return null;
      out.files++;
      out.regular++;
      out.bytes += l.size;
    } else if (l.kind === 'd' && t.type === 'd') {
      out.subdirs.push({ name: l.name(), dev: l.dev(), ino: l.ino(), subtree: new Uint8Array(tb.subarray(t.subtreeAt, t.subtreeAt + 32)) });
    } else if (l.kind === 'l' && t.type === 'l') {
      if (l.linkLength !== t.linkLength || lb.compare(tb, t.linkAt, t.linkAt + t.linkLength, l.linkAt, l.linkAt + l.linkLength) !== 0) return null;
      out.files++;
    } else {
      return null;
    }
  }
  return t.next() ? null : out;
}

/** Subdirectories opened and listed (with their parent-snapshot versions) a few ahead of the walk, taken in order. */
class Ahead {
  private readonly open: (k: number) => Promise<Subdir>;
  private readonly count: number;
  private readonly pending = new Map<number, Promise<Subdir>>();
  private started = 0;
  private taken = 0;

  constructor(count: number, open: (k: number) => Promise<Subdir>) {
    this.count = count;
    this.open = open;
  }

  /** The next subdirectory (the k-th). */
  take(k: number): Promise<Subdir> {
    while (this.started < this.count && this.started < this.taken + LIST_AHEAD) {
      const j = this.started++;
      this.pending.set(j, observed(this.open(j)));
    }
    this.taken++;
    const p = this.pending.get(k)!;
    this.pending.delete(k);
    return p;
  }

  /** Closes what was opened ahead and not taken; resolves once nothing of it is in flight. */
  abandon(): Promise<unknown>[] {
    const left = [...this.pending.values()];
    for (const p of left) void p.then((r) => 'fd' in r.sub && closeSync(r.sub.fd), () => {});
    return left;
  }
}

/** Each listed entry's node in the parent snapshot's version of its directory (both in name order in format 2: merged, no map). */
function previousNodes(entries: DirEntry[], parent: Earlier | null): (TreeNode | undefined)[] {
  const out = new Array<TreeNode | undefined>(entries.length);
  if (!parent) return out;
  const nodes = nodesOf(parent);
  if (!parent.id) {
    const byName = new Map(nodes.map((n) => [nameKey(n.name), n]));
    for (let i = 0; i < entries.length; i++) out[i] = byName.get(nameKey(entries[i]!.name));
    return out;
  }
  let j = 0;
  for (let i = 0; i < entries.length && j < nodes.length; i++) {
    const name = entries[i]!.name;
    let c = -1;
    while (j < nodes.length && (c = compareNames(nodes[j]!.name, name)) < 0) j++;
    if (c === 0) out[i] = nodes[j++];
  }
  return out;
}

/**
 * Copies of the names of files handed to the workers, side by side in small shared buffers. A
 * name posted as a view of its listing would take the whole listing with it (a posted view
 * copies its buffer); one buffer per name cost an allocation and a free on each thread.
 */
class NameArena {
  private buf = new Uint8Array(0);
  private at = 0;

  copy(name: Uint8Array): Uint8Array {
    if (this.at + name.length > this.buf.length) {
      this.buf = new Uint8Array(Math.max(ARENA_BYTES, name.length));
      this.at = 0;
    }
    const out = this.buf.subarray(this.at, this.at + name.length);
    out.set(name);
    this.at += name.length;
    return out;
  }
}

/** A batch posted to a worker copies each of these its names lie in, whole. */
const ARENA_BYTES = 2048;

/** Large files queued (each holding only its directory open) before the walk waits for one to be read. */
const LARGE_QUEUE = 2;

/**
 * Large files, read through the chunker on this thread one after another while the walk goes on
 * with the small ones. Their chunking and hashing here, and their chunks (which this thread may
 * encode, see WorkerPool), overlap the worker's reading of small files: read in turn, a large
 * file left the worker waiting on this thread, and the small files this thread waiting on the
 * worker (the real tree's backup: 0.95× the time, in a run side by side).
 */
class LargeFiles {
  private tail: Promise<unknown> = Promise.resolve();
  private queued = 0;
  private room: (() => void) | null = null;

  /** Queues `read` (after waiting while LARGE_QUEUE are queued); resolves to its outcome (wrapped: not awaited here). */
  async add<T>(read: () => Promise<T>): Promise<{ done: Promise<T> }> {
    while (this.queued >= LARGE_QUEUE) await new Promise<void>((resolve) => (this.room = resolve));
    this.queued++;
    const done = this.tail.then(read).finally(() => {
      this.queued--;
      const room = this.room;
      this.room = null;
      room?.();
    });
    this.tail = done.catch(() => {});
    return { done };
  }
}

export class SourceWalk {
  private readonly ctx: WalkContext;
  private readonly names = new NameArena();
  private readonly large = new LargeFiles();
  files = 0;
  directories = 0;
  sizeBytes = 0;

  constructor(ctx: WalkContext) {
    this.ctx = ctx;
  }

  private unchanged(prev: TreeNode | undefined, e: DirEntry): prev is TreeNode & { chunks: Uint8Array[]; sha256: Uint8Array } {
    return (
      prev !== undefined &&
      prev.type === 'f' &&
      prev.chunks !== undefined &&
      prev.sha256 !== undefined &&
      prev.size === e.size &&
      prev.mtimeNs === e.mtimeNs &&
      prev.ctimeNs === e.ctimeNs &&
      prev.ino === e.ino &&
      prev.chunks.every((id) => this.ctx.writer.usable(id, 'data', this.ctx.encryption))
    );
  }

  /** The parent snapshot's version of a directory, if it had one (a damaged one counts as none: everything is read). */
  private async previous(prev: TreeNode | { subtree: Uint8Array } | undefined): Promise<Earlier | null> {
    const parent = this.ctx.parent;
    if (!parent || !prev || ('type' in prev && prev.type !== 'd')) return null;
    try {
      return (prev.subtree && (await parent.stored(prev.subtree))) || (await parent.children(prev as TreeNode));
    } catch (err) {
      if (corrupt(err)) return null;
      throw err;
    }
  }

  /** Opens a directory (checked against what the walk saw) and has a worker list it. */
  async list(path: PathLike, expected: { dev: bigint; ino: bigint }): Promise<Listing | { error: string; code?: string }> {
    const opened = openDir(path, expected);
    if ('error' in opened) return opened;
    let listing: DirListing;
    try {
      // The directory opened is the one the scan listed: same device and inode.
      const scanned = await this.ctx.scanned(expected);
      listing = scanned ? { data: scanned } : await this.ctx.listDir({ fd: opened.fd });
      if ('error' in listing) {
        closeSync(opened.fd);
        return listing;
      }
      return { fd: opened.fd, data: listing.data };
    } catch (err) {
      closeSync(opened.fd);
      throw err;
    }
  }

  /** Opens one subdirectory of the directory open as `fd` (after the hook of the ones before it) and lists it. */
  private opener(fd: number, rel: Uint8Array): (name: Uint8Array, dir: { dev: bigint; ino: bigint }, earlier: () => Promise<Earlier | null>) => Promise<Subdir> {
    const { hooks } = this.ctx;
    let hooked: Promise<unknown> = Promise.resolve();
    return async (name, dir, earlier) => {
      if (hooks.beforeOpen) {
        const turn = hooked.then(() => hooks.beforeOpen?.(childPath(rel, name), 'directory'));
        hooked = turn.catch(() => {});
        await turn;
      }
      const before = this.ctx.parent ? await earlier() : null;
      return { earlier: before, sub: await this.list(atPath(fd, name), dir) };
    };
  }

  /**
   * Walks a listed directory (its handle is `listing.fd`, closed here once every entry is
   * stored) and returns once its work is scheduled; the thunk resolves to its tree id.
   */
  async dir(listing: Listing, rel: Uint8Array, parent: Earlier | null): Promise<Pending<Uint8Array>> {
    if ('data' in listing && parent?.id && parent.plain) {
      const { id, plain } = parent;
      let same: Unchanged | null = null;
      try {
        same = unchangedListing(listing.data, { id, plain }, (chunk) => this.ctx.writer.usable(chunk, 'data', this.ctx.encryption));
      } catch (err) {
        if (!corrupt(err)) {
          closeSync(listing.fd);
          throw err;
        }
        parent = null;
      }
      if (same) return this.unchangedDir(listing.fd, same, rel, { ...parent!, id, plain });
    }
    if (parent) {
      try {
        nodesOf(parent);
      } catch (err) {
        if (!corrupt(err)) throw err;
        parent = null;
      }
    }
    const entries = 'data' in listing ? decodeListing(listing.data) : listing.entries;
    return this.changedDir(listing.fd, entries, rel, parent);
  }

  /** A directory that matched its parent tree entry for entry: only its subdirectories are walked. */
  private async unchangedDir(fd: number, same: Unchanged, rel: Uint8Array, parent: StoredTree & { nodes?: TreeNode[] }): Promise<Pending<Uint8Array>> {
    const { warnings, signal } = this.ctx;
    this.ctx.progress.add(same.regular, same.bytes);
    const open = this.opener(fd, rel);
    const ahead = new Ahead(same.subdirs.length, (k) => {
      const d = same.subdirs[k]!;
      return open(d.name, d, () => this.previous({ subtree: d.subtree }));
    });
    const waits: Promise<Uint8Array | null>[] = [];
    try {
      for (let k = 0; k < same.subdirs.length; k++) {
        throwIfAborted(signal);
        const { earlier, sub } = await ahead.take(k);
        const path = childPath(rel, same.subdirs[k]!.name);
        if ('error' in sub) {
          warnings.add(path, sub.error);
          waits.push(Promise.resolve(null));
          continue;
        }
        waits.push(observed((await this.dir(sub, path, earlier))()));
      }
    } catch (err) {
      closeWhenSettled(fd, [...waits, ...ahead.abandon()]);
      throw err;
    }
    const finished = observed((async () => {
      const subtrees = await settleUnder(fd, waits);
      const kept = subtrees.every((id, k) => id !== null && bytesEqual(id, same.subdirs[k]!.subtree));
      let nodes: TreeNode[] | null = null;
      if (!kept || this.ctx.emit) {
        nodes = [];
        let k = 0;
        for (const n of nodesOf(parent)) {
          if (n.type !== 'd') {
            nodes.push(n);
            continue;
          }
          const id = subtrees[k++];
          if (id) nodes.push(bytesEqual(id, n.subtree!) ? n : { ...n, subtree: id });
        }
      }
      this.files += same.files;
      this.directories += subtrees.filter((id) => id !== null).length;
      this.sizeBytes += same.bytes;
      if (nodes && this.ctx.emit) await this.ctx.emit(nodes.map((n) => toEntryRecord(childPath(rel, n.name), n)));
      if (kept && this.ctx.writer.usable(parent.id, 'tree', true)) return parent.id;
      return (await this.ctx.writer.storeTree(encodeTree(nodes ?? nodesOf(parent))))();
    })());
    return () => finished;
  }

  private async changedDir(fd: number, entries: DirEntry[], rel: Uint8Array, parent: Earlier | null): Promise<Pending<Uint8Array>> {
    const { warnings, hooks, signal, writer } = this.ctx;
    const prevs = previousNodes(entries, parent);
    const work = new Gather(entries.length);
    // Subdirectories are opened, listed and matched with their parent's version a few ahead of
    // the walk, so that the round trips to the thread pool and the workers overlap.
    const subdirs: number[] = [];
    for (let i = 0; i < entries.length; i++) if (entries[i]!.kind === 'd' && !entries[i]!.error) subdirs.push(i);
    const open = this.opener(fd, rel);
    const ahead = new Ahead(subdirs.length, (k) => {
      const j = subdirs[k]!;
      return open(entries[j]!.name, entries[j]!, () => this.previous(prevs[j]));
    });
    let nextSub = 0;
    try {
      // Two passes: the large files first, each then read on this thread while the worker reads
      // the small files here and in the subdirectories (LargeFiles); then everything else. Which
      // pass takes an entry depends on its listing alone, so each is taken exactly once.
      for (let pass = 0; pass < 2; pass++) {
        for (let i = 0; i < entries.length; i++) {
          const e = entries[i]!;
          if ((pass === 0) !== (e.kind === 'f' && !e.error && e.size > SMALL_FILE)) continue;
          throwIfAborted(signal);
          if (e.error) {
            warnings.add(childPath(rel, e.name), e.error);
            continue;
          }
          const prev = prevs[i];
          if (e.kind === 'l') {
            // Its own copy of the target: the node may go out to onEntries.
            work.slots[i] = prev?.type === 'l' && sameMeta(prev, e) && bytesEqual(prev.link!, e.link!) ? prev : node(e, 'l', 0, undefined, undefined, undefined, e.link!.slice());
          } else if (e.kind === 'f') {
            if (this.unchanged(prev, e)) {
              work.slots[i] = prev.mode === e.mode ? prev : node(e, 'f', prev.size, prev.sha256, prev.chunks);
              this.ctx.progress.add(1, prev.size);
              continue;
            }
            if (hooks.beforeOpen) await hooks.beforeOpen(childPath(rel, e.name), 'file');
            if (e.size > SMALL_FILE) {
              const { done } = await this.large.add(() => this.stream(fd, e, rel));
              work.add(i, done.then((stored) => stored()));
            } else {
              const file = { dirFd: fd, name: this.names.copy(e.name), size: e.size, dev: e.dev, ino: e.ino };
              const stored = writer.storeFileNow(file) ?? (await writer.storeFile(file));
              this.small(work, i, e, fd, rel, stored());
            }
          } else if (e.kind === 'd') {
            const { earlier, sub } = await ahead.take(nextSub++);
            const path = childPath(rel, e.name);
            if ('error' in sub) {
              warnings.add(path, sub.error);
              continue;
            }
            const done = await this.dir(sub, path, earlier);
            work.add(
              i,
              done().then((subtree) => (prev?.type === 'd' && sameMeta(prev, e) && bytesEqual(prev.subtree!, subtree) ? prev : node(e, 'd', 0, undefined, undefined, subtree))),
            );
          } else {
            warnings.add(childPath(rel, e.name), `${describeKind(e.kind)}: not backed up`);
          }
        }
      }
    } catch (err) {
      closeWhenSettled(fd, [work.settled(), ...ahead.abandon()]);
      throw err;
    }
    const finished = observed((async () => {
      await work.settled();
      closeSync(fd);
      const nodes = work.nodes();
      for (const n of nodes) {
        if (n.type === 'd') this.directories++;
        else this.files++;
        this.sizeBytes += n.size;
      }
      if (this.ctx.emit) await this.ctx.emit(nodes.map((n) => toEntryRecord(childPath(rel, n.name), n)));
      // Every entry is its parent-snapshot node itself: the tree is the parent's, without encoding it.
      const before = parent?.id ? parent.nodes : undefined;
      const same = before && nodes.length === before.length && nodes.every((n, k) => n === before[k]);
      if (same && this.ctx.writer.usable(parent!.id!, 'tree', true)) return parent!.id!;
      const plain = encodeTree(nodes);
      if (parent?.id && parent.plain && bytesEqual(plain, parent.plain) && this.ctx.writer.usable(parent.id, 'tree', true)) return parent.id;
      return (await this.ctx.writer.storeTree(plain))();
    })());
    return () => finished;
  }

  /** A small file the writer took (read by a worker): its node once stored, or streamed here when it grew since the walk. */
  private small(work: Gather, i: number, e: DirEntry, dirFd: number, rel: Uint8Array, stored: Promise<StoredFile>): void {
    work.wait();
    stored.then(
      (r) => {
        try {
          if ('grew' in r) {
            work.add(
              i,
              this.stream(dirFd, e, rel).then((s) => s()),
            );
          } else {
            this.ctx.progress.add(1, e.size);
            if ('warning' in r) this.ctx.warnings.add(childPath(rel, e.name), r.warning);
            else work.slots[i] = node(e, 'f', e.size, r.sha256, r.id ? [r.id] : []);
          }
        } catch (err) {
          work.fail(err);
          return;
        }
        work.done();
      },
      (err: unknown) => work.fail(err),
    );
  }

  /** Reads a file through the chunker on this thread (large files, and small ones that grew since the walk); the thunk resolves to its node, or null when it was not read. */
  private async stream(dirFd: number, e: DirEntry, rel: Uint8Array): Promise<Pending<TreeNode | null>> {
    const { progress, warnings, writer } = this.ctx;
    const sha = createHash('sha256');
    const ids: Pending<Uint8Array>[] = [];
    let size = 0;
    const skipped = (reason: string): Pending<TreeNode | null> => {
      warnings.add(childPath(rel, e.name), reason);
      progress.add(1, Math.max(0, e.size - size));
      return () => Promise.resolve(null);
    };
    let fh: FileHandle;
    try {
      fh = await open(atPath(dirFd, e.name), FILE_FLAGS);
    } catch (err) {
      return skipped(openFailure(err));
    }
    try {
      const changed = changedSinceWalk(fstatOpened(fh.fd, e), { kind: 'f', dev: e.dev, ino: e.ino });
      if (changed) return skipped(changed);
      await chunkFile(fh, e.size, this.ctx.repo.chunker, async (chunk) => {
        throwIfAborted(this.ctx.signal);
        sha.update(chunk);
        size += chunk.length;
        progress.add(0, chunk.length);
        ids.push(await writer.store(chunk));
      });
    } catch (err) {
      await Promise.allSettled(ids.map((f) => f()));
      if (err instanceof EngineError) throw err;
      return skipped(`cannot be read: ${(err as Error).message}`);
    } finally {
      await fh.close().catch(() => {});
    }
    const n = node(e, 'f', size, new Uint8Array(sha.digest()), undefined);
    const result = Promise.all(ids.map((f) => f())).then((chunks) => {
      progress.add(1, 0);
      n.chunks = chunks;
      return n;
    });
    return () => result;
  }
}

/**
 * What a directory's tree waits for: its entries' nodes as they are stored (a count of what is
 * outstanding rather than a promise per entry gathered at the end), and the first failure.
 */
class Gather {
  readonly slots: (TreeNode | null)[];
  /** Entries outstanding, and the directory's own walk until `settled` is first called. */
  private left = 1;
  private failure: { err: unknown } | null = null;
  private readonly all: Promise<void>;
  private resolve!: () => void;
  private closed = false;

  constructor(entries: number) {
    this.slots = new Array<TreeNode | null>(entries).fill(null);
    this.all = new Promise((resolve) => (this.resolve = resolve));
  }

  /** Entry `i` is outstanding until `p` settles; its node then (null: left out). */
  add(i: number, p: Promise<TreeNode | null>): void {
    this.left++;
    p.then(
      (n) => {
        this.slots[i] = n;
        this.done();
      },
      (err: unknown) => this.fail(err),
    );
  }

  /** One more outstanding entry, settled by `done` or `fail`. */
  wait(): void {
    this.left++;
  }

  done(): void {
    if (--this.left === 0) this.resolve();
  }

  fail(err: unknown): void {
    this.failure ??= { err };
    this.done();
  }

  /** Every entry is scheduled: resolves (never rejects) once nothing is outstanding. */
  settled(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.done();
    }
    return this.all;
  }

  /** The nodes, in name order; the first failure instead if any. */
  nodes(): TreeNode[] {
    if (this.failure) throw this.failure.err;
    return this.slots.filter((n): n is TreeNode => n !== null);
  }
}

/** A node of the walk (one shape for every type). */
function node(e: DirEntry, type: TreeNode['type'], size: number, sha256: Uint8Array | undefined, chunks: Uint8Array[] | undefined, subtree?: Uint8Array, link?: Uint8Array): TreeNode {
  return { name: e.name, type, mode: e.mode, mtimeNs: e.mtimeNs, ctimeNs: e.ctimeNs, ino: e.ino, size, sha256, chunks, subtree, link };
}

/** Waits for everything scheduled under a directory's handle, then closes it; the results, or the first failure. */
async function settleUnder<T>(fd: number, waits: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(waits);
  closeSync(fd);
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** After a failure: the handle stays open until nothing scheduled can still use it. */
function closeWhenSettled(fd: number, pending: Promise<unknown>[]): void {
  void Promise.allSettled(pending).then(() => closeSync(fd));
}

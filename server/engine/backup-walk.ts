import { createHash } from 'node:crypto';
import { closeSync } from 'node:fs';
import type { PathLike } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import type { BlobWriter } from './blob-writer.ts';
import { bytesEqual } from './codec.ts';
import { EngineError, observed, throwIfAborted } from './errors.ts';
import { chunkFile } from './file-read.ts';
import type { ProgressReporter } from './progress.ts';
import type { Repository } from './repository.ts';
import { childPath, toEntryRecord } from './snapshot.ts';
import { FILE_FLAGS, atPath, changedSinceWalk, describeKind, openDir, openFailure } from './source.ts';
import type { Dir, SnapshotTrees } from './trees.ts';
import { compareNames, encodeTree } from './tree.ts';
import type { TreeNode } from './tree.ts';
import type { EntryRecord } from './types.ts';
import type { WarningList } from './warnings.ts';
import { decodeListing } from './listing.ts';
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
 * parent's tree id without storing anything.
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

type Subdir = { earlier: Dir | null; sub: { fd: number; entries: DirEntry[] } | { error: string; code?: string } };

/** Subdirectories of one directory opened and listed ahead of the walk. */
const LIST_AHEAD = 16;

function baseNode(e: DirEntry, type: TreeNode['type']): TreeNode {
  return { name: e.name, type, mode: e.mode, mtimeNs: e.mtimeNs, ctimeNs: e.ctimeNs, ino: e.ino, size: 0 };
}

/** Whether a parent-snapshot node has the metadata the walk sees now (its name matched already). */
function sameMeta(prev: TreeNode, e: DirEntry): boolean {
  return prev.mode === e.mode && prev.mtimeNs === e.mtimeNs && prev.ctimeNs === e.ctimeNs && prev.ino === e.ino;
}

function nameKey(name: Uint8Array): string {
  return Buffer.from(name.buffer, name.byteOffset, name.byteLength).toString('latin1');
}

/** Each listed entry's node in the parent snapshot's version of its directory (both in name order in format 2: merged, no map). */
function previousNodes(entries: DirEntry[], parent: Dir | null): (TreeNode | undefined)[] {
  const out = new Array<TreeNode | undefined>(entries.length);
  if (!parent) return out;
  const nodes = parent.nodes;
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

export class SourceWalk {
  private readonly ctx: WalkContext;
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
  private async previous(prev: TreeNode | undefined): Promise<Dir | null> {
    if (!this.ctx.parent || prev?.type !== 'd') return null;
    try {
      return await this.ctx.parent.children(prev);
    } catch (err) {
      if (err instanceof EngineError && err.code === 'CORRUPT_DATA') return null;
      throw err;
    }
  }

  /** Opens a directory (checked against what the walk saw) and has a worker list it. */
  async list(path: PathLike, expected: { dev: bigint; ino: bigint }): Promise<{ fd: number; entries: DirEntry[] } | { error: string; code?: string }> {
    const opened = await openDir(path, expected);
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
      return { fd: opened.fd, entries: decodeListing(listing.data) };
    } catch (err) {
      closeSync(opened.fd);
      throw err;
    }
  }

  /**
   * Walks a listed directory (its handle is `listing.fd`, closed here once every entry is
   * stored) and returns once its work is scheduled; the thunk resolves to its tree id.
   */
  async dir(listing: { fd: number; entries: DirEntry[] }, rel: Uint8Array, parent: Dir | null): Promise<Pending<Uint8Array>> {
    const { fd, entries } = listing;
    const { warnings, hooks, signal } = this.ctx;
    const prevs = previousNodes(entries, parent);
    const slots: (TreeNode | null)[] = new Array<TreeNode | null>(entries.length).fill(null);
    const waits: Promise<unknown>[] = [];
    // Subdirectories are opened, listed and matched with their parent's version a few ahead of
    // the walk, so that the round trips to the thread pool and the workers overlap.
    const subdirs: number[] = [];
    for (let i = 0; i < entries.length; i++) if (entries[i]!.kind === 'd' && !entries[i]!.error) subdirs.push(i);
    const ahead = new Map<number, Promise<Subdir>>();
    let started = 0;
    let nextSub = 0;
    let hooked: Promise<unknown> = Promise.resolve();
    const openSub = async (j: number): Promise<Subdir> => {
      const e = entries[j]!;
      const turn = hooked.then(() => hooks.beforeOpen?.(childPath(rel, e.name), 'directory'));
      hooked = turn.catch(() => {});
      await turn;
      const earlier = await this.previous(prevs[j]);
      return { earlier, sub: await this.list(atPath(fd, e.name), { dev: e.dev, ino: e.ino }) };
    };
    try {
      for (let i = 0; i < entries.length; i++) {
        throwIfAborted(signal);
        const e = entries[i]!;
        if (e.error) {
          warnings.add(childPath(rel, e.name), e.error);
          continue;
        }
        const prev = prevs[i];
        if (e.kind === 'l') {
          slots[i] = prev?.type === 'l' && sameMeta(prev, e) && bytesEqual(prev.link!, e.link!) ? prev : { ...baseNode(e, 'l'), link: e.link! };
        } else if (e.kind === 'f') {
          if (this.unchanged(prev, e)) {
            slots[i] = prev.mode === e.mode ? prev : { ...baseNode(e, 'f'), size: prev.size, sha256: prev.sha256, chunks: prev.chunks };
            this.ctx.progress.add(1, prev.size);
            continue;
          }
          const path = childPath(rel, e.name);
          await hooks.beforeOpen?.(path, 'file');
          const stored = await this.file(fd, e, path);
          waits.push(observed(stored().then((node) => (slots[i] = node))));
        } else if (e.kind === 'd') {
          while (started < subdirs.length && started < nextSub + LIST_AHEAD) {
            const j = subdirs[started++]!;
            ahead.set(j, observed(openSub(j)));
          }
          nextSub++;
          const { earlier, sub } = await ahead.get(i)!;
          ahead.delete(i);
          const path = childPath(rel, e.name);
          if ('error' in sub) {
            warnings.add(path, sub.error);
            continue;
          }
          const done = await this.dir(sub, path, earlier);
          waits.push(
            observed(done().then((subtree) => (slots[i] = prev?.type === 'd' && sameMeta(prev, e) && bytesEqual(prev.subtree!, subtree) ? prev : { ...baseNode(e, 'd'), subtree }))),
          );
        } else {
          warnings.add(childPath(rel, e.name), `${describeKind(e.kind)}: not backed up`);
        }
      }
    } catch (err) {
      for (const p of ahead.values()) void p.then((r) => 'fd' in r.sub && closeSync(r.sub.fd), () => {});
      // The handle stays open until nothing scheduled can still use it.
      void Promise.allSettled([...waits, ...ahead.values()]).then(() => closeSync(fd));
      throw err;
    }
    const finished = observed((async () => {
      const settled = await Promise.allSettled(waits);
      closeSync(fd);
      const failed = settled.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
      const nodes = slots.filter((n): n is TreeNode => n !== null);
      for (const n of nodes) {
        if (n.type === 'd') this.directories++;
        else this.files++;
        this.sizeBytes += n.size;
      }
      if (this.ctx.emit) await this.ctx.emit(nodes.map((n) => toEntryRecord(childPath(rel, n.name), n)));
      // Every entry is its parent-snapshot node itself: the tree is the parent's, without encoding it.
      const same = parent?.id && nodes.length === parent.nodes.length && nodes.every((n, k) => n === parent.nodes[k]);
      if (same && this.ctx.writer.usable(parent.id!, 'tree', true)) return parent.id!;
      const plain = encodeTree(nodes);
      if (parent?.id && parent.plain && bytesEqual(plain, parent.plain) && this.ctx.writer.usable(parent.id, 'tree', true)) return parent.id;
      return (await this.ctx.writer.storeTree(plain))();
    })());
    return () => finished;
  }

  /** Reads one regular file (through its directory's handle); the thunk resolves to its node, or null when it was not read. */
  private async file(dirFd: number, e: DirEntry, path: Uint8Array): Promise<Pending<TreeNode | null>> {
    if (e.size > SMALL_FILE) return this.stream(dirFd, e, path);
    const stored = await this.ctx.writer.storeFile({ dirFd, name: e.name, size: e.size, dev: e.dev, ino: e.ino });
    const node = stored().then(async (r): Promise<TreeNode | null> => {
      if ('grew' in r) return (await this.stream(dirFd, e, path))();
      this.ctx.progress.add(1, e.size);
      if ('warning' in r) {
        this.ctx.warnings.add(path, r.warning);
        return null;
      }
      return { ...baseNode(e, 'f'), size: e.size, sha256: r.sha256, chunks: r.id ? [r.id] : [] };
    });
    return () => node;
  }

  /** Reads a file through the chunker on this thread (large files, and small ones that grew since the walk). */
  private async stream(dirFd: number, e: DirEntry, path: Uint8Array): Promise<Pending<TreeNode | null>> {
    const { progress, warnings, writer } = this.ctx;
    const sha = createHash('sha256');
    const ids: Pending<Uint8Array>[] = [];
    let size = 0;
    const skipped = (reason: string): Pending<TreeNode | null> => {
      warnings.add(path, reason);
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
      const changed = changedSinceWalk(await fh.stat({ bigint: true }), { kind: 'f', dev: e.dev, ino: e.ino });
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
    const node: TreeNode = { ...baseNode(e, 'f'), size, sha256: new Uint8Array(sha.digest()) };
    const result = Promise.all(ids.map((f) => f())).then((chunks) => {
      progress.add(1, 0);
      node.chunks = chunks;
      return node;
    });
    return () => result;
  }
}

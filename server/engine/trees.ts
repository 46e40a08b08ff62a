import { decodeBlob } from './blob.ts';
import { locate, packFailure, relocated } from './chunk-reader.ts';
import { toHex } from './codec.ts';
import { EngineError, abortable } from './errors.ts';
import { fromV1Tree } from './legacy.ts';
import { release } from './release.ts';
import type { LegacyTree, V1Entry } from './legacy.ts';
import { decodeMeta } from './meta.ts';
import { packName } from './pack.ts';
import type { Repository } from './repository.ts';
import type { SnapshotHeader } from './snapshot.ts';
import { ObjectNotFoundError } from './storage/errors.ts';
import { decodeTree, validName } from './tree.ts';
import type { TreeNode } from './tree.ts';

/**
 * Reads a snapshot's directories one at a time, so that restore, listing, verify and the next
 * backup never hold more than the directories they are in. Tree packs are read whole and the
 * last few kept (a tree pack holds the trees of neighbouring directories, and object stores
 * answer one request per read): a walk costs about one read per tree pack, not one per
 * directory. A format-1 snapshot's single tree object is read once and split into directories.
 */
export interface Dir {
  nodes: TreeNode[];
  /** The tree's id and plaintext (format 2), for a backup to tell an unchanged directory at once. */
  id?: Uint8Array;
  plain?: Uint8Array;
}

/** A directory's tree as stored (format 2), not decoded: a backup compares it with the source as it is. */
export interface StoredTree {
  id: Uint8Array;
  plain: Uint8Array;
}

const CACHED_PACKS = 4;

/** A tree pack read, with the loads using it now; `dropped` once it left the cache. */
interface CachedPack {
  data: Promise<Uint8Array>;
  users: number;
  dropped: boolean;
}

/**
 * Loads trees by id, keeping the last few tree packs it read. A pack that leaves the cache is
 * freed as soon as no load uses it, not at the next collection: several packs of a few MB each
 * waiting for the collector, then freed, left the allocator's heap with holes the next packs did
 * not fit (about 30 MB of resident memory more by the end of a million-file walk).
 */
export class TreeLoader {
  private readonly repo: Repository;
  private readonly signal: AbortSignal | undefined;
  private readonly packs = new Map<string, CachedPack>();
  private refreshed: Promise<void> | null = null;

  constructor(repo: Repository, signal?: AbortSignal) {
    this.repo = repo;
    this.signal = signal;
  }

  async load(id: Uint8Array): Promise<Dir> {
    const { plain } = await this.stored(id);
    return { id, plain, nodes: decodeTree(plain, `tree ${toHex(id)}`) };
  }

  async stored(id: Uint8Array): Promise<StoredTree> {
    let loc = await abortable(
      locate(this.repo, id, 'tree', () => (this.refreshed ??= this.repo.refreshIndex())),
      this.signal,
    );
    const decode = (pack: Uint8Array): StoredTree => {
      if (loc.offset + loc.length > pack.length) throw new EngineError('CORRUPT_DATA', `pack ${loc.pack} is shorter than its index says`, { pack: loc.pack });
      const plain = decodeBlob(this.repo.blobKeys, loc, pack.subarray(loc.offset, loc.offset + loc.length));
      return { id, plain: plain.buffer === pack.buffer ? new Uint8Array(plain) : plain }; // nothing outlives the pack's buffer
    };
    try {
      return await this.withPack(loc.pack, decode);
    } catch (err) {
      // The pack is gone: a prune moved the tree since the index was loaded.
      const moved = err instanceof EngineError && err.details.missing ? await abortable(relocated(this.repo, loc), this.signal) : undefined;
      if (!moved) throw err;
      loc = moved;
      return this.withPack(loc.pack, decode);
    }
  }

  /** Runs `use` on a pack (read, or taken from the cache); the pack is not freed meanwhile. */
  private async withPack<T>(id: string, use: (pack: Uint8Array) => T): Promise<T> {
    const entry = this.pack(id);
    entry.users++;
    try {
      return use(await abortable(entry.data, this.signal));
    } finally {
      entry.users--;
      free(entry);
    }
  }

  private pack(id: string): CachedPack {
    let entry = this.packs.get(id);
    if (entry) {
      this.packs.delete(id); // most recently used last
      this.packs.set(id, entry);
      return entry;
    }
    const data = this.repo.backend.load(packName(id)).catch((err: unknown) => {
      if (this.packs.get(id) === entry) this.packs.delete(id);
      throw packFailure(err, id);
    });
    entry = { data, users: 0, dropped: false };
    this.packs.set(id, entry);
    if (this.packs.size > CACHED_PACKS) {
      const [oldest, dropped] = this.packs.entries().next().value!;
      this.packs.delete(oldest);
      dropped.dropped = true;
      free(dropped);
    }
    return entry;
  }
}

/** Frees a pack that left the cache once no load uses it (release() leaves a buffer it does not own alone). */
function free(entry: CachedPack): void {
  if (entry.dropped && entry.users === 0) void entry.data.then((b) => release(b), () => {});
}

export class SnapshotTrees {
  private readonly repo: Repository;
  private readonly header: SnapshotHeader;
  private readonly signal: AbortSignal | undefined;
  private readonly loader: TreeLoader;
  private legacy: LegacyTree | null = null;

  constructor(repo: Repository, header: SnapshotHeader, signal?: AbortSignal) {
    this.repo = repo;
    this.header = header;
    this.signal = signal;
    this.loader = new TreeLoader(repo, signal);
  }

  static async open(repo: Repository, snapshotId: string, signal?: AbortSignal): Promise<SnapshotTrees> {
    return new SnapshotTrees(repo, await repo.snapshot(snapshotId), signal);
  }

  get snapshot(): SnapshotHeader {
    return this.header;
  }

  async root(): Promise<Dir> {
    if (this.header.tree !== null) return this.loader.load(Buffer.from(this.header.tree, 'hex'));
    const name = `trees/${this.header.id}`;
    let data: Uint8Array;
    try {
      data = await abortable(this.repo.backend.load(name), this.signal);
    } catch (err) {
      if (err instanceof ObjectNotFoundError) throw new EngineError('CORRUPT_DATA', `${name} is missing`, { object: name });
      throw packFailure(err, name);
    }
    this.legacy = fromV1Tree(decodeMeta<V1Entry[]>(this.repo.key, 'tree', data, name));
    return { nodes: checked(this.legacy.root, name) };
  }

  /** A directory's tree by id, not decoded (null for a format-1 snapshot, whose directories have none). */
  async stored(id: Uint8Array): Promise<StoredTree | null> {
    return this.header.tree === null ? null : this.loader.stored(id);
  }

  /** The directory a node of type 'd' stands for. */
  async children(node: TreeNode): Promise<Dir> {
    if (this.legacy) return { nodes: checked(this.legacy.children.get(node) ?? [], `trees/${this.header.id}`) };
    if (!node.subtree) throw new EngineError('CORRUPT_DATA', 'a directory entry has no tree', {});
    return this.loader.load(node.subtree);
  }
}

function checked(nodes: TreeNode[], what: string): TreeNode[] {
  for (const n of nodes) if (!validName(n.name)) throw new EngineError('CORRUPT_DATA', `${what} holds an unsafe name`, { object: what });
  return nodes;
}

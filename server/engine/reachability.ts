import { decodeBlob } from './blob.ts';
import type { BlobTable, BlobType } from './blob-table.ts';
import { fromHex, toHex } from './codec.ts';
import { EngineError, abortable, fromStorage, throwIfAborted } from './errors.ts';
import type { V1Entry } from './legacy.ts';
import { decodeMeta } from './meta.ts';
import { packName } from './pack.ts';
import type { Repository } from './repository.ts';
import type { SnapshotHeader } from './snapshot.ts';
import { StorageFullError, StorageUnavailableError } from './storage/errors.ts';
import { decodeTree } from './tree.ts';

/**
 * What the snapshots reference: marks every tree and data blob reachable from the snapshots
 * given, in a byte per slot of the blob table (`used`), so memory is one byte per indexed blob
 * plus the trees waiting to be read (numbers, not objects). Trees are read one tree pack at a
 * time: the trees waiting are grouped by pack, each pack is loaded once per round, and a
 * subtree found in the pack being read is read at once. A tree already marked is not read
 * again, so snapshots that share most of their trees cost little more than one.
 *
 * An `extra` table (index files written after `primary` was loaded) lets new snapshots be walked
 * without adding to `primary`, whose slot numbers stay fixed. Problems (a blob no index lists,
 * a tree that cannot be read) go to `onProblem`; failures of the storage itself are thrown.
 */
export interface Unreachable {
  type: BlobType;
  id: Uint8Array;
  why: 'missing' | 'damaged';
  message: string;
}

const PACKS_AT_ONCE = 4;

export class Reachability {
  /** Over primary's slots: 1 when referenced. */
  readonly used: Uint8Array;
  trees = 0;
  private readonly seenExtra: Uint8Array | null;
  private readonly tables: readonly BlobTable[];
  /** Trees to read: slot * 2 + (0 primary, 1 extra). */
  private frontier: number[] = [];
  private readonly reported = new Set<string>();
  private readonly repo: Repository;
  private readonly onProblem: (p: Unreachable) => void;
  private readonly signal: AbortSignal | undefined;

  /** `used` carries the marks of an earlier walk over the same primary table: trees it marked are not read again. */
  constructor(repo: Repository, primary: BlobTable, extra: BlobTable | null, onProblem: (p: Unreachable) => void, signal?: AbortSignal, used?: Uint8Array) {
    this.repo = repo;
    this.tables = extra ? [primary, extra] : [primary];
    this.used = used ?? new Uint8Array(primary.capacity);
    this.seenExtra = extra ? new Uint8Array(extra.capacity) : null;
    this.onProblem = onProblem;
    this.signal = signal;
  }

  private problem(type: BlobType, id: Uint8Array, why: Unreachable['why'], message: string): void {
    const key = `${type}:${toHex(id)}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.onProblem({ type, id, why, message });
  }

  /** Marks a tree; returns its entry to read, or null when it was marked already (or is missing). */
  private markTree(id: Uint8Array): number | null {
    const slot = this.tables[0]!.find(id, 'tree');
    if (slot >= 0) {
      if (this.used[slot]) return null;
      this.used[slot] = 1;
      return slot * 2;
    }
    const extra = this.tables[1] ? this.tables[1].find(id, 'tree') : -1;
    if (extra >= 0) {
      if (this.seenExtra![extra]) return null;
      this.seenExtra![extra] = 1;
      return extra * 2 + 1;
    }
    this.problem('tree', id, 'missing', `tree ${toHex(id)} is not in the repository index`);
    return null;
  }

  private markData(id: Uint8Array): void {
    const slot = this.tables[0]!.find(id, 'data');
    if (slot >= 0) this.used[slot] = 1;
    else if (!this.tables[1] || this.tables[1].find(id, 'data') < 0) this.problem('data', id, 'missing', `data blob ${toHex(id)} is not in the repository index`);
  }

  /** Adds a snapshot's root (format 2), or marks the chunks of its single tree object (format 1). */
  async addSnapshot(header: SnapshotHeader): Promise<void> {
    if (header.tree !== null) {
      const root = this.markTree(fromHex(header.tree));
      if (root !== null) this.frontier.push(root);
      return;
    }
    const name = `trees/${header.id}`;
    let entries: V1Entry[];
    try {
      entries = decodeMeta<V1Entry[]>(this.repo.key, 'tree', await abortable(this.repo.backend.load(name), this.signal), name);
    } catch (err) {
      if (isStorageFailure(err)) throw fromStorage(err);
      this.problem('tree', fromHex(header.id), 'damaged', `${name} cannot be read: ${(err as Error).message}`);
      return;
    }
    for (const e of entries) for (const c of e.c ?? []) this.markData(fromHex(c));
  }

  /** Reads every tree waiting, and the trees they lead to, until none is left. */
  async run(): Promise<void> {
    while (this.frontier.length > 0) {
      const groups = new Map<number, number[]>();
      for (const e of this.frontier) {
        const key = this.tables[e % 2]!.packOf(Math.floor(e / 2)) * 2 + (e % 2);
        let group = groups.get(key);
        if (!group) groups.set(key, (group = []));
        group.push(e);
      }
      this.frontier = [];
      const queue = [...groups];
      const worker = async (): Promise<void> => {
        for (let g = queue.shift(); g; g = queue.shift()) await this.readPack(g[0], g[1]);
      };
      await Promise.all(Array.from({ length: PACKS_AT_ONCE }, worker));
    }
  }

  private async readPack(key: number, entries: number[]): Promise<void> {
    throwIfAborted(this.signal);
    const which = key % 2;
    const table = this.tables[which]!;
    const pack = table.packId(Math.floor(key / 2));
    let data: Uint8Array;
    try {
      data = await abortable(this.repo.backend.load(packName(pack)), this.signal);
    } catch (err) {
      if (isStorageFailure(err) || (err instanceof EngineError && err.code === 'CANCELLED')) throw fromStorage(err);
      for (const e of entries) this.problem('tree', table.location(Math.floor(e / 2)).id, 'damaged', `pack ${pack} cannot be read: ${(err as Error).message}`);
      return;
    }
    for (let e = entries.pop(); e !== undefined; e = entries.pop()) {
      const loc = table.location(Math.floor(e / 2));
      let nodes;
      try {
        if (loc.offset + loc.length > data.length) throw new EngineError('CORRUPT_DATA', `pack ${pack} is shorter than its index says`);
        nodes = decodeTree(decodeBlob(this.repo.blobKeys, loc, data.subarray(loc.offset, loc.offset + loc.length)), `tree ${toHex(loc.id)}`);
      } catch (err) {
        this.problem('tree', loc.id, 'damaged', (err as Error).message);
        continue;
      }
      this.trees++;
      for (const n of nodes) {
        if (n.type === 'f') for (const c of n.chunks ?? []) this.markData(c);
        else if (n.type === 'd' && n.subtree) {
          const next = this.markTree(n.subtree);
          if (next === null) continue;
          // A subtree in the pack already loaded is read now; others wait for the next round.
          if (next % 2 === which && this.tables[which]!.packOf(Math.floor(next / 2)) * 2 + which === key) entries.push(next);
          else this.frontier.push(next);
        }
      }
    }
  }
}

function isStorageFailure(err: unknown): boolean {
  return err instanceof StorageUnavailableError || err instanceof StorageFullError;
}

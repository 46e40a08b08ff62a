import { toHex } from './codec.ts';
import { release } from './release.ts';
import type { CompressionCode } from './types.ts';

/**
 * The in-memory index of stored blobs, compact: an open-addressing hash table (linear probing)
 * over one Buffer of fixed 49-byte records, and the ids of the packs in another Buffer (32 bytes
 * each, referred to by number). No object per blob, so the garbage collector never walks it.
 *
 *   record: id (32) | pack number u32 | offset u32 | length u32 | raw length u32 | flags u8
 *   flags:  1 used | 2 encrypted | 4 tree blob | (comp << 3)
 *
 * The table grows by half when 4/5 full (the old one freed at once, not at the next collection),
 * so it costs between 61 and 92 bytes per blob (about 75 on average; doubling at 3/4 cost 98 and
 * held three times the table while growing), plus 32 bytes per pack (and a map entry per pack to
 * find its number). Ids are keyed hashes, uniform: a slot is found from their first 4 bytes
 * scaled to the table's size, which need not be a power of two. The key of a record is
 * (id, type, encrypted): a plaintext copy of a chunk is a different blob than its encrypted copy.
 */
export type BlobType = 'data' | 'tree';

export interface BlobLocation {
  id: Uint8Array;
  type: BlobType;
  encrypted: boolean;
  comp: CompressionCode;
  pack: string;
  offset: number;
  length: number;
  rawLength: number;
}

export const RECORD_BYTES = 49;
const PACK = 32;
const OFFSET = 36;
const LENGTH = 40;
const RAW = 44;
const FLAGS = 48;
const USED = 1;
const ENCRYPTED = 2;
const TREE = 4;
const KEY_FLAGS = USED | ENCRYPTED | TREE;

function keyFlags(type: BlobType, encrypted: boolean): number {
  return USED | (encrypted ? ENCRYPTED : 0) | (type === 'tree' ? TREE : 0);
}

export class BlobTable {
  private table: Buffer;
  private slotCount: number;
  private count = 0;
  private packs = Buffer.alloc(32 * 64);
  private numbered = 0;
  private readonly packNumbers = new Map<string, number>();

  constructor(capacity = 1024) {
    this.table = Buffer.alloc(capacity * RECORD_BYTES);
    this.slotCount = capacity;
  }

  get size(): number {
    return this.count;
  }

  /** Slots in the table (for a bitmap over them). */
  get capacity(): number {
    return this.slotCount;
  }

  /** Bytes the table and the pack list take. */
  get bytes(): number {
    return this.table.length + this.packs.length;
  }

  /** Packs numbered so far (0 … packCount - 1). */
  get packCount(): number {
    return this.numbered;
  }

  /** A pack's id (hex) from its number. */
  packId(n: number): string {
    return this.packs.toString('hex', n * 32, n * 32 + 32);
  }

  /** Whether a pack (id in hex) holds blobs of this table. */
  hasPack(hex: string): boolean {
    return this.packNumbers.has(hex);
  }

  /** The number of a pack (given as its 32-byte id), added on first sight. */
  packNumber(id: Uint8Array): number {
    const hex = toHex(id);
    let n = this.packNumbers.get(hex);
    if (n === undefined) {
      n = this.numbered++;
      if (this.numbered * 32 > this.packs.length) {
        const bigger = Buffer.alloc(this.packs.length * 2);
        this.packs.copy(bigger);
        this.packs = bigger;
      }
      this.packs.set(id, n * 32);
      this.packNumbers.set(hex, n);
    }
    return n;
  }

  /** The first slot to look at for the id at `at` in `buf`. */
  private home(buf: Uint8Array, at = 0): number {
    const h = (buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16) | (buf[at + 3]! << 24)) >>> 0;
    return Math.min(this.slotCount - 1, Math.floor((h / 4294967296) * this.slotCount));
  }

  private next(slot: number): number {
    return slot + 1 === this.slotCount ? 0 : slot + 1;
  }

  private matches(slot: number, id: Uint8Array): boolean {
    const at = slot * RECORD_BYTES;
    const t = this.table;
    // Most records probed are other blobs: their first bytes differ, without a native call.
    if (t[at + 4] !== id[4] || t[at + 5] !== id[5] || t[at + 6] !== id[6] || t[at + 7] !== id[7]) return false;
    return t.compare(id, 0, 32, at, at + 32) === 0;
  }

  /** The slot of (id, type, encrypted), or -1. */
  slotOf(id: Uint8Array, type: BlobType, encrypted: boolean): number {
    const want = keyFlags(type, encrypted);
    for (let slot = this.home(id); ; slot = this.next(slot)) {
      const flags = this.table[slot * RECORD_BYTES + FLAGS]!;
      if (flags === 0) return -1;
      if ((flags & KEY_FLAGS) === want && this.matches(slot, id)) return slot;
    }
  }

  has(id: Uint8Array, type: BlobType, encrypted: boolean): boolean {
    return this.slotOf(id, type, encrypted) >= 0;
  }

  /** Any stored copy of the blob, preferring the encrypted one; -1 when there is none. */
  find(id: Uint8Array, type: BlobType): number {
    const slot = this.slotOf(id, type, true);
    return slot >= 0 ? slot : this.slotOf(id, type, false);
  }

  /** Adds a blob unless a copy with the same key is already there; false then. */
  add(id: Uint8Array, type: BlobType, encrypted: boolean, comp: CompressionCode, pack: number, offset: number, length: number, rawLength: number): boolean {
    if (this.slotOf(id, type, encrypted) >= 0) return false;
    if ((this.count + 1) * 5 > this.capacity * 4) this.grow();
    let slot = this.home(id);
    while (this.table[slot * RECORD_BYTES + FLAGS] !== 0) slot = this.next(slot);
    const at = slot * RECORD_BYTES;
    this.table.set(id, at);
    this.table.writeUInt32LE(pack, at + PACK);
    this.table.writeUInt32LE(offset, at + OFFSET);
    this.table.writeUInt32LE(length, at + LENGTH);
    this.table.writeUInt32LE(rawLength, at + RAW);
    this.table[at + FLAGS] = keyFlags(type, encrypted) | (comp << 3);
    this.count++;
    return true;
  }

  private grow(): void {
    const old = this.table;
    const oldCapacity = this.capacity;
    this.slotCount = Math.ceil(oldCapacity * 1.5);
    this.table = Buffer.alloc(this.slotCount * RECORD_BYTES);
    for (let s = 0; s < oldCapacity; s++) {
      const at = s * RECORD_BYTES;
      if (old[at + FLAGS] === 0) continue;
      let slot = this.home(old, at);
      while (this.table[slot * RECORD_BYTES + FLAGS] !== 0) slot = this.next(slot);
      old.copy(this.table, slot * RECORD_BYTES, at, at + RECORD_BYTES);
    }
    release(old);
  }

  location(slot: number): BlobLocation {
    const at = slot * RECORD_BYTES;
    const t = this.table;
    const flags = t[at + FLAGS]!;
    const pack = t.readUInt32LE(at + PACK);
    return {
      id: new Uint8Array(t.subarray(at, at + 32)),
      type: flags & TREE ? 'tree' : 'data',
      encrypted: (flags & ENCRYPTED) !== 0,
      comp: ((flags >> 3) & 3) as CompressionCode,
      pack: this.packId(pack),
      offset: t.readUInt32LE(at + OFFSET),
      length: t.readUInt32LE(at + LENGTH),
      rawLength: t.readUInt32LE(at + RAW),
    };
  }

  /** Whether the blob in a slot is a tree blob, and its stored length (without building a location). */
  isTree(slot: number): boolean {
    return (this.table[slot * RECORD_BYTES + FLAGS]! & TREE) !== 0;
  }

  lengthOf(slot: number): number {
    return this.table.readUInt32LE(slot * RECORD_BYTES + LENGTH);
  }

  /** Pack number and offset of a slot, for sorting reads in pack order without building locations. */
  packOf(slot: number): number {
    return this.table.readUInt32LE(slot * RECORD_BYTES + PACK);
  }

  offsetOf(slot: number): number {
    return this.table.readUInt32LE(slot * RECORD_BYTES + OFFSET);
  }

  /** Every used slot, in table order. */
  *slots(): Generator<number> {
    for (let s = 0; s < this.capacity; s++) if (this.table[s * RECORD_BYTES + FLAGS] !== 0) yield s;
  }
}

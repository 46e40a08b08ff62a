import { toHex } from './codec.ts';
import { release } from './release.ts';
import type { CompressionCode } from './types.ts';

/**
 * The in-memory index of stored blobs, compact: 256 open-addressing hash tables (linear probing),
 * one per first byte of the id, each over one Buffer of fixed 49-byte records, and the ids of the
 * packs in another Buffer (32 bytes each, referred to by number). No object per blob, so the
 * garbage collector never walks it.
 *
 *   record: id (32) | pack number u32 | offset u32 | length u32 | raw length u32 | flags u8
 *   flags:  1 used | 2 encrypted | 4 tree blob | (comp << 3)
 *
 * A segment grows by half when 4/5 full (the old one freed at once, not at the next collection),
 * so the table costs between 61 and 92 bytes per blob (about 75 on average), plus 32 bytes per
 * pack (and a map entry per pack to find its number); as segments grow one at a time, growing
 * holds a 256th of the table twice, never the whole table. Ids are keyed hashes, uniform: a slot
 * is found from their bytes 1-4 scaled to the segment's size, which need not be a power of two.
 * The key of a record is (id, type, encrypted): a plaintext copy of a chunk is a different blob
 * than its encrypted copy. A slot number (segments laid end to end) holds until the table grows.
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

const SEGMENTS = 256;

export class BlobTable {
  private readonly segs: Buffer[] = [];
  /** Each segment's first slot number (and the total at the end); recomputed after a segment grows. */
  private readonly starts = new Float64Array(SEGMENTS + 1);
  private startsValid = false;
  /** Blobs in each segment. */
  private readonly used = new Uint32Array(SEGMENTS);
  private count = 0;
  private packs = Buffer.alloc(32 * 64);
  private numbered = 0;
  private readonly packNumbers = new Map<string, number>();
  /** Where the last slot looked up lies: its segment's records and its byte offset there. */
  private at = 0;

  constructor(capacity = 1024) {
    const per = Math.max(4, Math.ceil(capacity / SEGMENTS));
    for (let i = 0; i < SEGMENTS; i++) this.segs.push(Buffer.alloc(per * RECORD_BYTES));
  }

  get size(): number {
    return this.count;
  }

  /** Slots in the table (for a bitmap over them). */
  get capacity(): number {
    return this.start(SEGMENTS);
  }

  private start(seg: number): number {
    if (!this.startsValid) {
      let n = 0;
      for (let i = 0; i < SEGMENTS; i++) {
        this.starts[i] = n;
        n += this.segs[i]!.length / RECORD_BYTES;
      }
      this.starts[SEGMENTS] = n;
      this.startsValid = true;
    }
    return this.starts[seg]!;
  }

  /** The records holding a slot; `this.at` is set to the slot's byte offset in them. */
  private locate(slot: number): Buffer {
    this.start(0);
    let lo = 0;
    let hi = SEGMENTS - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= slot) lo = mid;
      else hi = mid - 1;
    }
    this.at = (slot - this.starts[lo]!) * RECORD_BYTES;
    return this.segs[lo]!;
  }

  /** Bytes the table and the pack list take. */
  get bytes(): number {
    let n = this.packs.length;
    for (const t of this.segs) n += t.length;
    return n;
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

  /** The first slot to look at, in a segment of `slots` slots, for the id at `at` in `buf`. */
  private static home(buf: Uint8Array, at: number, slots: number): number {
    const h = (buf[at + 1]! | (buf[at + 2]! << 8) | (buf[at + 3]! << 16) | (buf[at + 4]! << 24)) >>> 0;
    return Math.min(slots - 1, Math.floor((h / 4294967296) * slots));
  }

  /** The slot of (id, type, encrypted) in its segment `t`, or -1. */
  private local(t: Buffer, id: Uint8Array, want: number): number {
    const slots = t.length / RECORD_BYTES;
    for (let slot = BlobTable.home(id, 0, slots); ; slot = slot + 1 === slots ? 0 : slot + 1) {
      const at = slot * RECORD_BYTES;
      const flags = t[at + FLAGS]!;
      if (flags === 0) return -1;
      // Most records probed are other blobs: their first bytes differ, without a native call.
      if ((flags & KEY_FLAGS) !== want || t[at + 5] !== id[5] || t[at + 6] !== id[6] || t[at + 7] !== id[7] || t[at + 8] !== id[8]) continue;
      if (t.compare(id, 0, 32, at, at + 32) === 0) return slot;
    }
  }

  /** The slot of (id, type, encrypted), or -1. */
  slotOf(id: Uint8Array, type: BlobType, encrypted: boolean): number {
    const seg = id[0]!;
    const slot = this.local(this.segs[seg]!, id, keyFlags(type, encrypted));
    return slot < 0 ? -1 : this.start(seg) + slot;
  }

  has(id: Uint8Array, type: BlobType, encrypted: boolean): boolean {
    return this.local(this.segs[id[0]!]!, id, keyFlags(type, encrypted)) >= 0;
  }

  /** Any stored copy of the blob, preferring the encrypted one; -1 when there is none. */
  find(id: Uint8Array, type: BlobType): number {
    const slot = this.slotOf(id, type, true);
    return slot >= 0 ? slot : this.slotOf(id, type, false);
  }

  /** Adds a blob unless a copy with the same key is already there; false then. */
  add(id: Uint8Array, type: BlobType, encrypted: boolean, comp: CompressionCode, pack: number, offset: number, length: number, rawLength: number): boolean {
    const seg = id[0]!;
    let t = this.segs[seg]!;
    if (this.local(t, id, keyFlags(type, encrypted)) >= 0) return false;
    if ((this.used[seg]! + 1) * 5 > (t.length / RECORD_BYTES) * 4) t = this.grow(seg);
    const slots = t.length / RECORD_BYTES;
    let slot = BlobTable.home(id, 0, slots);
    while (t[slot * RECORD_BYTES + FLAGS] !== 0) slot = slot + 1 === slots ? 0 : slot + 1;
    const at = slot * RECORD_BYTES;
    t.set(id.subarray(0, 32), at);
    t.writeUInt32LE(pack, at + PACK);
    t.writeUInt32LE(offset, at + OFFSET);
    t.writeUInt32LE(length, at + LENGTH);
    t.writeUInt32LE(rawLength, at + RAW);
    t[at + FLAGS] = keyFlags(type, encrypted) | (comp << 3);
    this.used[seg]!++;
    this.count++;
    return true;
  }

  /**
   * Makes room for `blobs` more (spread evenly over the segments, as uniform ids are), growing
   * each segment at most once: a known number of blobs then goes in without the table growing
   * step by step (each step copies a segment and frees the old one; the allocator's heap kept
   * the holes, about 50 MB of resident memory for an index of a million blobs).
   */
  reserve(blobs: number): void {
    const per = Math.ceil(blobs / SEGMENTS);
    for (let seg = 0; seg < SEGMENTS; seg++) {
      const slots = this.segs[seg]!.length / RECORD_BYTES;
      const need = this.used[seg]! + per;
      if (need * 5 > slots * 4) this.grow(seg, Math.ceil((need * 5) / 4) + 1);
    }
  }

  private grow(seg: number, atLeast = 0): Buffer {
    const old = this.segs[seg]!;
    const oldSlots = old.length / RECORD_BYTES;
    const slots = Math.max(atLeast, Math.ceil(oldSlots * 1.5));
    const t = Buffer.alloc(slots * RECORD_BYTES);
    for (let s = 0; s < oldSlots; s++) {
      const from = s * RECORD_BYTES;
      if (old[from + FLAGS] === 0) continue;
      let slot = BlobTable.home(old, from, slots);
      while (t[slot * RECORD_BYTES + FLAGS] !== 0) slot = slot + 1 === slots ? 0 : slot + 1;
      const to = slot * RECORD_BYTES;
      for (let i = 0; i < RECORD_BYTES; i++) t[to + i] = old[from + i]!;
    }
    this.segs[seg] = t;
    this.startsValid = false;
    release(old);
    return t;
  }

  location(slot: number): BlobLocation {
    const t = this.locate(slot);
    const at = this.at;
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
    const t = this.locate(slot);
    return (t[this.at + FLAGS]! & TREE) !== 0;
  }

  lengthOf(slot: number): number {
    const t = this.locate(slot);
    return t.readUInt32LE(this.at + LENGTH);
  }

  /** Pack number and offset of a slot, for sorting reads in pack order without building locations. */
  packOf(slot: number): number {
    const t = this.locate(slot);
    return t.readUInt32LE(this.at + PACK);
  }

  offsetOf(slot: number): number {
    const t = this.locate(slot);
    return t.readUInt32LE(this.at + OFFSET);
  }

  /** Every used slot, in table order. */
  *slots(): Generator<number> {
    for (let seg = 0; seg < SEGMENTS; seg++) {
      const t = this.segs[seg]!;
      const base = this.start(seg);
      for (let s = 0; s < t.length / RECORD_BYTES; s++) if (t[s * RECORD_BYTES + FLAGS] !== 0) yield base + s;
    }
  }
}

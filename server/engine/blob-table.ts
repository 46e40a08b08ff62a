import { toHex } from './codec.ts';
import { EngineError } from './errors.ts';
import { IdStore } from './id-store.ts';
import { release } from './release.ts';
import type { CompressionCode } from './types.ts';

/**
 * The in-memory index of stored blobs, compact: 256 open-addressing hash tables (linear probing),
 * one per first byte of the id, each over one Uint32Array of fixed 24-byte records, the full ids
 * apart (an IdStore, in entry order), and the ids of the packs in another Buffer (32 bytes each,
 * referred to by number). No object per blob, so the garbage collector never walks it.
 *
 *   record (6 × u32): id bytes 1-4 | pack number << 5 | flags | id entry | offset | length | raw length
 *   flags:  1 used | 2 encrypted | 4 tree blob | (comp << 3)
 *
 * A record holds 5 bytes of its id (the segment and the key word); a record whose 5 bytes match
 * is confirmed against the full id in the store before it is taken for the blob (`find`, `has`,
 * `add`): two blobs sharing those bytes are both found, and a dedup hit is never a prefix hit.
 * Only `findToRead` takes the one record of a chain matching its 5 bytes without reading the
 * store, for readers that check the blob they read against its id (AES-GCM with the id as
 * associated data, and the keyed hash).
 *
 * A segment grows by half when 4/5 full (the old one freed at once, not at the next collection),
 * so the records cost between 30 and 45 bytes per blob (`reserve` sizes them at 30), plus 32
 * bytes per pack (and a map entry per pack to find its number), plus the ids: 32 bytes per blob
 * in memory, or, past `idsInMemory` bytes of them, in a temp file (64 KiB in memory). Ids are
 * keyed hashes, uniform: a slot is found from their bytes 1-4 scaled to the segment's size,
 * which need not be a power of two. The key of a record is (id, type, encrypted): a plaintext
 * copy of a chunk is a different blob than its encrypted copy. A slot number (segments laid end
 * to end) holds until the table grows.
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

/** Words (u32) of a record, and their order. */
const WORDS = 6;
export const RECORD_BYTES = WORDS * 4;
const KEY = 0;
const WORD = 1; // pack number << 5 | flags; 0 for an empty slot
const ENTRY = 2;
const OFFSET = 3;
const LENGTH = 4;
const RAW = 5;
const USED = 1;
const ENCRYPTED = 2;
const TREE = 4;
const KEY_FLAGS = USED | ENCRYPTED | TREE;
const FLAG_BITS = 5;
/** Pack numbers fit in the 27 bits above the flags. */
const MAX_PACKS = 2 ** (32 - FLAG_BITS);

function keyFlags(type: BlobType, encrypted: boolean): number {
  return USED | (encrypted ? ENCRYPTED : 0) | (type === 'tree' ? TREE : 0);
}

/** The key word of an id: its bytes 1-4 (byte 0 names the segment). */
function keyOf(id: Uint8Array): number {
  return (id[1]! | (id[2]! << 8) | (id[3]! << 16) | (id[4]! << 24)) >>> 0;
}

const SEGMENTS = 256;

export interface BlobTableOptions {
  /** Bytes of full ids kept in memory, the rest in a temp file (the repository's index, a check's copy); default: all in memory. */
  idsInMemory?: number;
}

export class BlobTable {
  private readonly segs: Uint32Array[] = [];
  /** Each segment's first slot number (and the total at the end); recomputed after a segment grows. */
  private readonly starts = new Float64Array(SEGMENTS + 1);
  private startsValid = false;
  /** Blobs in each segment. */
  private readonly used = new Uint32Array(SEGMENTS);
  private count = 0;
  private packs = Buffer.alloc(32 * 64);
  private numbered = 0;
  private readonly packNumbers = new Map<string, number>();
  private readonly ids: IdStore;
  /** Where the last slot looked up lies: its segment's records and its word offset there. */
  private at = 0;

  constructor(capacity = 1024, options: BlobTableOptions = {}) {
    const per = Math.max(4, Math.ceil(capacity / SEGMENTS));
    for (let i = 0; i < SEGMENTS; i++) this.segs.push(new Uint32Array(per * WORDS));
    this.ids = new IdStore(options.idsInMemory ?? Infinity);
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
        n += this.segs[i]!.length / WORDS;
      }
      this.starts[SEGMENTS] = n;
      this.startsValid = true;
    }
    return this.starts[seg]!;
  }

  /** The records holding a slot; `this.at` is set to the slot's word offset in them. */
  private locate(slot: number): Uint32Array {
    this.start(0);
    let lo = 0;
    let hi = SEGMENTS - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= slot) lo = mid;
      else hi = mid - 1;
    }
    this.at = (slot - this.starts[lo]!) * WORDS;
    return this.segs[lo]!;
  }

  /** Bytes the table, the pack list and the ids held in memory take. */
  get bytes(): number {
    let n = this.packs.length + this.ids.residentBytes;
    for (const t of this.segs) n += t.byteLength;
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
      if (this.numbered === MAX_PACKS) throw new EngineError('INTERNAL_ERROR', `the index holds more than ${MAX_PACKS} packs`);
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

  /** The first slot to look at, in a segment of `slots` slots, for a key word. */
  private static home(key: number, slots: number): number {
    return Math.min(slots - 1, Math.floor((key / 4294967296) * slots));
  }

  /** The slot of (id, type, encrypted) in its segment, confirmed against the full id, or -1. */
  private local(seg: number, id: Uint8Array, want: number): number {
    const t = this.segs[seg]!;
    const slots = t.length / WORDS;
    const key = keyOf(id);
    for (let slot = BlobTable.home(key, slots); ; slot = slot + 1 === slots ? 0 : slot + 1) {
      const at = slot * WORDS;
      const word = t[at + WORD]!;
      if (word === 0) return -1;
      if (t[at + KEY] === key && (word & KEY_FLAGS) === want && this.ids.equals(t[at + ENTRY]!, id)) return slot;
    }
  }

  /** The slot of (id, type, encrypted), or -1. */
  slotOf(id: Uint8Array, type: BlobType, encrypted: boolean): number {
    const seg = id[0]!;
    const slot = this.local(seg, id, keyFlags(type, encrypted));
    return slot < 0 ? -1 : this.start(seg) + slot;
  }

  has(id: Uint8Array, type: BlobType, encrypted: boolean): boolean {
    return this.local(id[0]!, id, keyFlags(type, encrypted)) >= 0;
  }

  /** Any stored copy of the blob, preferring the encrypted one; -1 when there is none. */
  find(id: Uint8Array, type: BlobType): number {
    const slot = this.slotOf(id, type, true);
    return slot >= 0 ? slot : this.slotOf(id, type, false);
  }

  /**
   * As `find`, for a reader that checks what it reads against the id: when a single record of
   * the type matches the id's first 5 bytes, it is taken without reading the full id (were it
   * another blob, the read fails its check: the blob is not in the index); when several match,
   * the full ids decide.
   */
  findToRead(id: Uint8Array, type: BlobType): number {
    const seg = id[0]!;
    const t = this.segs[seg]!;
    const slots = t.length / WORDS;
    const key = keyOf(id);
    const tree = type === 'tree' ? TREE : 0;
    let found = -1;
    for (let slot = BlobTable.home(key, slots); ; slot = slot + 1 === slots ? 0 : slot + 1) {
      const at = slot * WORDS;
      const word = t[at + WORD]!;
      if (word === 0) break;
      if (t[at + KEY] !== key || (word & TREE) !== tree) continue;
      if (found >= 0) return this.find(id, type);
      found = slot;
    }
    return found < 0 ? -1 : this.start(seg) + found;
  }

  /** Adds a blob unless a copy with the same key is already there; false then. */
  add(id: Uint8Array, type: BlobType, encrypted: boolean, comp: CompressionCode, pack: number, offset: number, length: number, rawLength: number): boolean {
    const seg = id[0]!;
    const flags = keyFlags(type, encrypted);
    if (this.local(seg, id, flags) >= 0) return false;
    let t = this.segs[seg]!;
    if ((this.used[seg]! + 1) * 5 > (t.length / WORDS) * 4) t = this.grow(seg);
    const slots = t.length / WORDS;
    const key = keyOf(id);
    let slot = BlobTable.home(key, slots);
    while (t[slot * WORDS + WORD] !== 0) slot = slot + 1 === slots ? 0 : slot + 1;
    const at = slot * WORDS;
    t[at + KEY] = key;
    t[at + WORD] = ((pack << FLAG_BITS) | flags | (comp << 3)) >>> 0;
    t[at + ENTRY] = this.ids.append(id);
    t[at + OFFSET] = offset;
    t[at + LENGTH] = length;
    t[at + RAW] = rawLength;
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
      const slots = this.segs[seg]!.length / WORDS;
      const need = this.used[seg]! + per;
      if (need * 5 > slots * 4) this.grow(seg, Math.ceil((need * 5) / 4) + 1);
    }
  }

  private grow(seg: number, atLeast = 0): Uint32Array {
    const old = this.segs[seg]!;
    const oldSlots = old.length / WORDS;
    const slots = Math.max(atLeast, Math.ceil(oldSlots * 1.5));
    const t = new Uint32Array(slots * WORDS);
    for (let from = 0; from < old.length; from += WORDS) {
      if (old[from + WORD] === 0) continue;
      let slot = BlobTable.home(old[from + KEY]!, slots);
      while (t[slot * WORDS + WORD] !== 0) slot = slot + 1 === slots ? 0 : slot + 1;
      const to = slot * WORDS;
      for (let i = 0; i < WORDS; i++) t[to + i] = old[from + i]!;
    }
    this.segs[seg] = t;
    this.startsValid = false;
    release(new Uint8Array(old.buffer));
    return t;
  }

  /** The blob in a slot; its id read from the store unless the caller gives it (`findToRead`'s query: what a reader checks). */
  location(slot: number, id?: Uint8Array): BlobLocation {
    const t = this.locate(slot);
    const at = this.at;
    const word = t[at + WORD]!;
    const copy = new Uint8Array(32);
    if (id) copy.set(id.subarray(0, 32));
    else this.ids.read(t[at + ENTRY]!, copy);
    return {
      id: copy,
      type: word & TREE ? 'tree' : 'data',
      encrypted: (word & ENCRYPTED) !== 0,
      comp: ((word >> 3) & 3) as CompressionCode,
      pack: this.packId(word >>> FLAG_BITS),
      offset: t[at + OFFSET]!,
      length: t[at + LENGTH]!,
      rawLength: t[at + RAW]!,
    };
  }

  /** Whether the blob in a slot is a tree blob, its stored and raw lengths (without building a location). */
  isTree(slot: number): boolean {
    const t = this.locate(slot);
    return (t[this.at + WORD]! & TREE) !== 0;
  }

  lengthOf(slot: number): number {
    const t = this.locate(slot);
    return t[this.at + LENGTH]!;
  }

  rawLengthOf(slot: number): number {
    const t = this.locate(slot);
    return t[this.at + RAW]!;
  }

  /** Pack number and offset of a slot, for sorting reads in pack order without building locations. */
  packOf(slot: number): number {
    const t = this.locate(slot);
    return t[this.at + WORD]! >>> FLAG_BITS;
  }

  offsetOf(slot: number): number {
    const t = this.locate(slot);
    return t[this.at + OFFSET]!;
  }

  /** Every used slot, in table order. */
  *slots(): Generator<number> {
    for (let seg = 0; seg < SEGMENTS; seg++) {
      const t = this.segs[seg]!;
      const base = this.start(seg);
      for (let s = 0; s < t.length / WORDS; s++) if (t[s * WORDS + WORD] !== 0) yield base + s;
    }
  }
}

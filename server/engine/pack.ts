import { createHash } from 'node:crypto';
import type { EncodedBlob } from './blob.ts';
import type { BlobType } from './blob-table.ts';
import { ByteReader, ByteWriter } from './codec.ts';
import type { MasterKey } from './crypto.ts';
import { EngineError } from './errors.ts';
import { decodeAnyMeta, encodeBinaryMeta } from './meta.ts';
import { releasePrivate } from './release.ts';
import type { Backend } from './storage/backend.ts';
import type { CompressionCode } from './types.ts';

/**
 * A pack holds blobs of one type (data or tree) back to back, then a sealed header listing them
 * (so an index can be rebuilt from the packs alone), then the header's length (u32 LE). Packs
 * are named data/<first two hex digits>/<SHA-256 of the pack>. Tree packs are kept apart from
 * data packs so that what reads trees (listing, prune, check) never reads file data. Data packs
 * close at the size their storage asks for (`Backend.packing`), tree packs at 4 MiB.
 */
export const TREE_PACK_SIZE = 4 * 1024 * 1024;
/**
 * A pack is also closed at this many blobs: what a pack being filled holds per blob stays bounded
 * for tiny blobs too (its header: 48 bytes a blob). High enough that packs of small files still
 * reach the pack size (at 4,096 they closed at 3–12 MB: more objects, more requests).
 */
export const PACK_BLOBS = 16384;

/** One blob's place in a pack (its id may be a view into a record buffer: copy it to keep it). */
export interface PackedBlob {
  id: Uint8Array;
  type: BlobType;
  encrypted: boolean;
  comp: CompressionCode;
  offset: number;
  length: number;
  rawLength: number;
}

/**
 * The blob list of a pack being built, compact: 45-byte records (id 32 | flags u8: 1 encrypted,
 * comp << 1 | offset u32 | length u32 | raw length u32) in one growing buffer, no object per blob.
 */
export class BlobRecords {
  static readonly BYTES = 45;
  readonly type: BlobType;
  private buf = Buffer.alloc(BlobRecords.BYTES * 64);
  count = 0;

  constructor(type: BlobType) {
    this.type = type;
  }

  add(id: Uint8Array, encrypted: boolean, comp: CompressionCode, offset: number, length: number, rawLength: number): void {
    const at = this.count * BlobRecords.BYTES;
    if (at + BlobRecords.BYTES > this.buf.length) {
      const bigger = Buffer.alloc(this.buf.length * 2);
      this.buf.copy(bigger);
      this.buf = bigger;
    }
    this.buf.set(id, at);
    this.buf[at + 32] = (encrypted ? 1 : 0) | (comp << 1);
    this.buf.writeUInt32LE(offset, at + 33);
    this.buf.writeUInt32LE(length, at + 37);
    this.buf.writeUInt32LE(rawLength, at + 41);
    this.count++;
  }

  *[Symbol.iterator](): Generator<PackedBlob> {
    for (let i = 0; i < this.count; i++) {
      const at = i * BlobRecords.BYTES;
      const flags = this.buf[at + 32]!;
      yield {
        id: this.buf.subarray(at, at + 32),
        type: this.type,
        encrypted: (flags & 1) === 1,
        comp: ((flags >> 1) & 3) as CompressionCode,
        offset: this.buf.readUInt32LE(at + 33),
        length: this.buf.readUInt32LE(at + 37),
        rawLength: this.buf.readUInt32LE(at + 41),
      };
    }
  }
}

export interface FinishedPack {
  id: Uint8Array;
  type: BlobType;
  blobs: Iterable<PackedBlob> & { count: number };
  size: number;
}

export function packName(id: string): string {
  return `data/${id.slice(0, 2)}/${id}`;
}

/** The blob list of one pack, as index files and pack headers hold it (readBlobList hands each blob to `each`, its id a view valid during the call). */
export function writeBlobList(w: ByteWriter, type: BlobType, blobs: Iterable<PackedBlob> & { count: number }): void {
  w.u8(type === 'tree' ? 1 : 0);
  w.varint(blobs.count);
  for (const b of blobs) {
    w.raw(b.id);
    w.u8((b.encrypted ? 1 : 0) | (b.comp << 1));
    w.varint(b.offset);
    w.varint(b.length);
    w.varint(b.rawLength);
  }
}

export function readBlobList(
  r: ByteReader,
  what: string,
  each: (id: Uint8Array, type: BlobType, encrypted: boolean, comp: CompressionCode, offset: number, length: number, rawLength: number) => void,
): BlobType {
  const t = r.u8();
  if (t > 1) throw new EngineError('CORRUPT_DATA', `${what}: unknown pack type`, { object: what });
  const type: BlobType = t === 1 ? 'tree' : 'data';
  const n = r.varint();
  for (let i = 0; i < n; i++) {
    const id = r.view(32); // valid during the call only: no object per blob when an index is loaded
    const flags = r.u8();
    each(id, type, (flags & 1) === 1, ((flags >> 1) & 3) as CompressionCode, r.varint(), r.varint(), r.varint());
  }
  return type;
}

/** Blob data is gathered in slabs of this size (fewer, larger buffers than one per blob). */
const SLAB = 1024 * 1024;

/**
 * Builds one pack in memory and saves it whole, as object stores require. The pack is named by
 * the SHA-256 of its bytes, so a repeated save (a retry, a second writer with the same content)
 * can only ever write the same object. Small blobs are copied into 1 MiB slabs as they arrive;
 * nothing is kept per blob but its 45-byte record.
 */
export class PackWriter {
  readonly type: BlobType;
  readonly blobs: BlobRecords;
  size = 0;
  private readonly parts: Uint8Array[] = [];
  private slab: Buffer | null = null;
  private slabUsed = 0;
  private readonly backend: Backend;

  constructor(backend: Backend, type: BlobType) {
    this.backend = backend;
    this.type = type;
    this.blobs = new BlobRecords(type);
  }

  /**
   * Appends a blob; its buffer (transferred from a worker: private) is copied into a slab and
   * freed, or kept when large. A blob sharing its buffer (`release`) is always copied.
   */
  add(blob: EncodedBlob, encrypted: boolean): void {
    const data = blob.data;
    this.blobs.add(blob.id, encrypted, blob.comp, this.size, data.length, blob.rawLength);
    this.size += data.length;
    if (data.length >= SLAB / 4 && !blob.release) {
      this.closeSlab();
      this.parts.push(data);
      return;
    }
    if (!this.slab || this.slabUsed + data.length > this.slab.length) {
      this.closeSlab();
      this.slab = Buffer.allocUnsafeSlow(SLAB);
    }
    this.slab.set(data, this.slabUsed);
    this.slabUsed += data.length;
    if (blob.release) blob.release();
    else releasePrivate(data);
  }

  private closeSlab(): void {
    if (this.slab && this.slabUsed > 0) this.parts.push(this.slab.subarray(0, this.slabUsed));
    this.slab = null;
    this.slabUsed = 0;
  }

  /** Appends the header and saves the pack; its buffers are released once saved (or on failure). */
  async finish(key: MasterKey): Promise<FinishedPack> {
    try {
      this.closeSlab();
      const w = new ByteWriter(64 + this.blobs.count * 48);
      writeBlobList(w, this.type, this.blobs);
      const header = encodeBinaryMeta(key, 'pack-header', w.finish());
      const len = Buffer.alloc(4);
      len.writeUInt32LE(header.length);
      const parts = [...this.parts, header, len];
      const hash = createHash('sha256');
      for (const part of parts) hash.update(part);
      const digest = hash.digest();
      await this.backend.save(packName(digest.toString('hex')), parts);
      return { id: new Uint8Array(digest), type: this.type, blobs: this.blobs, size: this.size + header.length + 4 };
    } finally {
      this.abort();
    }
  }

  /** Drops the buffered blobs; nothing was saved. */
  abort(): void {
    for (const part of this.parts) releasePrivate(part); // slabs and transferred blobs: private
    this.parts.length = 0;
    this.slab = null;
  }
}

/** Reads the blob list from a whole format-2 pack's bytes (to cross-check or rebuild an index). */
export function readPackHeader(key: MasterKey, pack: Uint8Array, name: string): { type: BlobType; blobs: PackedBlob[] } {
  const len = Buffer.from(pack.buffer, pack.byteOffset, pack.byteLength).readUInt32LE(pack.length - 4);
  const meta = decodeAnyMeta(key, 'pack-header', pack.subarray(pack.length - 4 - len, pack.length - 4), name);
  if (!('binary' in meta)) throw new EngineError('CORRUPT_DATA', `${name}: a format-1 pack header`, { object: name });
  const blobs: PackedBlob[] = [];
  const type = readBlobList(new ByteReader(meta.binary, name), name, (id, t, encrypted, comp, offset, length, rawLength) =>
    blobs.push({ id: new Uint8Array(id), type: t, encrypted, comp, offset, length, rawLength }),
  );
  return { type, blobs };
}

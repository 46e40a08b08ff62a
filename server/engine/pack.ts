import { createHash } from 'node:crypto';
import type { EncodedBlob } from './blob.ts';
import type { BlobType } from './blob-table.ts';
import { ByteReader, ByteWriter } from './codec.ts';
import type { MasterKey } from './crypto.ts';
import { EngineError } from './errors.ts';
import { decodeAnyMeta, encodeBinaryMeta } from './meta.ts';
import { releasePrivate } from './release.ts';
import type { Backend, ObjectWriter } from './storage/backend.ts';
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

/** Blob data is gathered in slabs of this size (fewer, larger buffers and writes than one per blob). */
export const SLAB = 1024 * 1024;

/**
 * Builds one pack and writes it through the storage's ObjectWriter (`Backend.create`) as it
 * fills: a local directory appends it to a temp file, an object store keeps it until the pack is
 * sealed. The pack is named by the SHA-256 of its bytes, hashed as they are handed over, so a
 * repeated save (a retry, a second writer with the same content) can only ever write the same
 * object. Small blobs are copied into 1 MiB slabs, each handed over when full; a large blob is
 * handed over as it is. Nothing is kept per blob but its 45-byte record. `onWritten` is told of
 * each blob byte the writer no longer holds (written out, or dropped by `abort`).
 */
export class PackWriter {
  readonly type: BlobType;
  readonly blobs: BlobRecords;
  size = 0;
  private readonly out: ObjectWriter;
  private readonly hash = createHash('sha256');
  private readonly onWritten: ((bytes: number) => void) | undefined;
  private slab: Buffer | null = null;
  private slabUsed = 0;
  private ended = false;

  constructor(backend: Backend, type: BlobType, onWritten?: (bytes: number) => void) {
    this.type = type;
    this.blobs = new BlobRecords(type);
    this.out = backend.create();
    this.onWritten = onWritten;
  }

  /**
   * Appends a blob; its buffer (transferred from a worker: private) is copied into a slab and
   * freed, or handed over when large and freed once written. A blob sharing its buffer
   * (`release`) is always copied.
   */
  add(blob: EncodedBlob, encrypted: boolean): void {
    const data = blob.data;
    this.blobs.add(blob.id, encrypted, blob.comp, this.size, data.length, blob.rawLength);
    this.size += data.length;
    if (data.length >= SLAB / 4 && !blob.release) {
      this.closeSlab();
      this.hand(data, true);
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
    if (this.slab && this.slabUsed > 0) this.hand(this.slab.subarray(0, this.slabUsed), true);
    this.slab = null;
    this.slabUsed = 0;
  }

  /** Hashes a part and hands it to the writer; a private part (slab, transferred blob) is freed once written. */
  private hand(part: Uint8Array, blobBytes: boolean): void {
    this.hash.update(part);
    const bytes = part.length; // a released view has none
    void this.out.write(part).then(() => {
      if (!blobBytes) return;
      releasePrivate(part);
      this.onWritten?.(bytes);
    });
  }

  /** Appends the header and seals the pack under its name; what it wrote is removed on failure. */
  async finish(key: MasterKey): Promise<FinishedPack> {
    if (this.ended) throw new Error('the pack was already finished or aborted');
    this.closeSlab();
    this.ended = true;
    const w = new ByteWriter(64 + this.blobs.count * 48);
    writeBlobList(w, this.type, this.blobs);
    const header = encodeBinaryMeta(key, 'pack-header', w.finish());
    const len = Buffer.alloc(4);
    len.writeUInt32LE(header.length);
    this.hand(header, false);
    this.hand(len, false);
    const digest = this.hash.digest();
    try {
      await this.out.commit(packName(digest.toString('hex')));
    } catch (err) {
      await this.out.abort();
      throw err;
    }
    return { id: new Uint8Array(digest), type: this.type, blobs: this.blobs, size: this.size + header.length + 4 };
  }

  /** Drops the pack: nothing is saved, what was written is removed. */
  async abort(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    if (this.slabUsed > 0) this.onWritten?.(this.slabUsed);
    if (this.slab) releasePrivate(this.slab);
    this.slab = null;
    this.slabUsed = 0;
    await this.out.abort();
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

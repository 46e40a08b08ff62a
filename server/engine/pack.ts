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
 * data packs so that what reads trees (listing, prune, check) never reads file data.
 */
export const DATA_PACK_SIZE = 16 * 1024 * 1024;
export const TREE_PACK_SIZE = 4 * 1024 * 1024;

export interface PackedBlob {
  id: Uint8Array;
  type: BlobType;
  encrypted: boolean;
  comp: CompressionCode;
  offset: number;
  length: number;
  rawLength: number;
}

export interface FinishedPack {
  id: Uint8Array;
  type: BlobType;
  blobs: PackedBlob[];
  size: number;
}

export function packName(id: string): string {
  return `data/${id.slice(0, 2)}/${id}`;
}

/** The blob list of one pack, as index files and pack headers hold it. */
export function writeBlobList(w: ByteWriter, type: BlobType, blobs: readonly PackedBlob[]): void {
  w.u8(type === 'tree' ? 1 : 0);
  w.varint(blobs.length);
  for (const b of blobs) {
    w.raw(b.id);
    w.u8((b.encrypted ? 1 : 0) | (b.comp << 1));
    w.varint(b.offset);
    w.varint(b.length);
    w.varint(b.rawLength);
  }
}

export function readBlobList(r: ByteReader, what: string): { type: BlobType; blobs: PackedBlob[] } {
  const t = r.u8();
  if (t > 1) throw new EngineError('CORRUPT_DATA', `${what}: unknown pack type`, { object: what });
  const type: BlobType = t === 1 ? 'tree' : 'data';
  const n = r.varint();
  const blobs: PackedBlob[] = [];
  for (let i = 0; i < n; i++) {
    const id = r.raw(32);
    const flags = r.u8();
    blobs.push({ id, type, encrypted: (flags & 1) === 1, comp: ((flags >> 1) & 3) as CompressionCode, offset: r.varint(), length: r.varint(), rawLength: r.varint() });
  }
  return { type, blobs };
}

/**
 * Builds one pack in memory and saves it whole, as object stores require. The pack is named by
 * the SHA-256 of its bytes, so a repeated save (a retry, a second writer with the same content)
 * can only ever write the same object.
 */
export class PackWriter {
  readonly type: BlobType;
  readonly blobs: PackedBlob[] = [];
  size = 0;
  private readonly parts: Uint8Array[] = [];
  private readonly backend: Backend;

  constructor(backend: Backend, type: BlobType) {
    this.backend = backend;
    this.type = type;
  }

  /** Appends a blob (its buffer is kept until the pack is saved). */
  add(blob: EncodedBlob, encrypted: boolean): void {
    this.blobs.push({ id: blob.id, type: this.type, encrypted, comp: blob.comp, offset: this.size, length: blob.data.length, rawLength: blob.rawLength });
    this.parts.push(blob.data);
    this.size += blob.data.length;
  }

  /** Appends the header and saves the pack; its buffers are released once saved (or on failure). */
  async finish(key: MasterKey): Promise<FinishedPack> {
    try {
      const w = new ByteWriter(64 + this.blobs.length * 48);
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
    for (const part of this.parts) releasePrivate(part); // blobs arrive transferred from a worker: private
    this.parts.length = 0;
  }
}

/** Reads the blob list from a whole format-2 pack's bytes (to cross-check or rebuild an index). */
export function readPackHeader(key: MasterKey, pack: Uint8Array, name: string): { type: BlobType; blobs: PackedBlob[] } {
  const len = Buffer.from(pack.buffer, pack.byteOffset, pack.byteLength).readUInt32LE(pack.length - 4);
  const meta = decodeAnyMeta(key, 'pack-header', pack.subarray(pack.length - 4 - len, pack.length - 4), name);
  if (!('binary' in meta)) throw new EngineError('CORRUPT_DATA', `${name}: a format-1 pack header`, { object: name });
  return readBlobList(new ByteReader(meta.binary, name), name);
}

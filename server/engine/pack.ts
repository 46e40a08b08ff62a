import { createHash } from 'node:crypto';
import type { EncodedBlob } from './blob.ts';
import type { MasterKey } from './crypto.ts';
import { releasePrivate } from './release.ts';
import type { Backend } from './storage/backend.ts';
import { decodeMeta, encodeMeta } from './meta.ts';
import type { CompressionCode } from './types.ts';

/**
 * A pack file holds many blobs back to back, then a sealed header listing them (so an
 * index can be rebuilt from the packs alone), then the header's length (u32 LE).
 * Packs are named data/<first two hex digits>/<SHA-256 of the pack>.
 */
export const TARGET_PACK_SIZE = 16 * 1024 * 1024;

export interface PackedBlob {
  id: string;
  encrypted: boolean;
  comp: CompressionCode;
  offset: number;
  length: number;
  rawLength: number;
}

export function packName(id: string): string {
  return `data/${id.slice(0, 2)}/${id}`;
}

export interface FinishedPack {
  id: string;
  blobs: PackedBlob[];
  size: number;
}

/**
 * Builds one pack in memory (about 16 MiB) and saves it whole, as object stores require. The
 * pack is named by the SHA-256 of its bytes, so a save that is repeated (a retry, a second
 * writer with the same content) can only ever write the same object.
 */
export class PackWriter {
  readonly blobs: PackedBlob[] = [];
  size = 0;
  private readonly parts: Uint8Array[] = [];
  private readonly backend: Backend;

  constructor(backend: Backend) {
    this.backend = backend;
  }

  /** Appends a blob (its buffer is kept until the pack is saved). */
  add(blob: EncodedBlob, encrypted: boolean): void {
    this.blobs.push({ id: blob.id, encrypted, comp: blob.comp, offset: this.size, length: blob.data.length, rawLength: blob.rawLength });
    this.parts.push(blob.data);
    this.size += blob.data.length;
  }

  /** Appends the header and saves the pack; its buffers are released once saved (or on failure). */
  async finish(key: MasterKey): Promise<FinishedPack> {
    try {
      const header = encodeMeta(key, 'pack-header', this.blobs.map(toRow));
      const len = Buffer.alloc(4);
      len.writeUInt32LE(header.length);
      const parts = [...this.parts, header, len];
      const hash = createHash('sha256');
      for (const part of parts) hash.update(part);
      const id = hash.digest('hex');
      await this.backend.save(packName(id), parts);
      return { id, blobs: this.blobs, size: this.size + header.length + 4 };
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

export type BlobRow = [id: string, encrypted: 0 | 1, comp: CompressionCode, offset: number, length: number, rawLength: number];

export function toRow(b: PackedBlob): BlobRow {
  return [b.id, b.encrypted ? 1 : 0, b.comp, b.offset, b.length, b.rawLength];
}

export function fromRow(r: BlobRow): PackedBlob {
  return { id: r[0], encrypted: r[1] === 1, comp: r[2], offset: r[3], length: r[4], rawLength: r[5] };
}

/** Reads the blob list from a whole pack's bytes (used to cross-check or rebuild an index). */
export function readPackHeader(key: MasterKey, pack: Uint8Array, name: string): PackedBlob[] {
  const len = Buffer.from(pack.buffer, pack.byteOffset, pack.byteLength).readUInt32LE(pack.length - 4);
  const rows = decodeMeta<BlobRow[]>(key, 'pack-header', pack.subarray(pack.length - 4 - len, pack.length - 4), name);
  return rows.map(fromRow);
}

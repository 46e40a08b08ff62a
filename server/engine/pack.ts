import type { EncodedBlob } from './blob.ts';
import type { MasterKey } from './crypto.ts';
import { release } from './release.ts';
import type { Backend, ObjectWriter } from './storage/backend.ts';
import { randomId } from './crypto.ts';
import { decodeMeta, encodeMeta } from './meta.ts';
import type { CompressionCode } from './types.ts';

/**
 * A pack file holds many blobs back to back, then a sealed header listing them (so an
 * index can be rebuilt from the packs alone), then the header's length (u32 LE).
 * Packs are named data/<first two hex digits>/<random id>.
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
 * Streams one pack to storage: each blob is written at its offset as soon as it is added
 * (its buffer released once written), so a pack is never held in memory whole.
 */
export class PackWriter {
  readonly id = randomId();
  readonly blobs: PackedBlob[] = [];
  size = 0;
  private readonly writer: Promise<ObjectWriter>;
  private readonly writes: Promise<void>[] = [];

  constructor(backend: Backend) {
    this.writer = backend.createWriter(packName(this.id));
    this.writer.catch(() => {}); // surfaced by the first write or by finish
  }

  /** Appends a blob; `written` settles when its bytes are in the file. */
  add(blob: EncodedBlob, encrypted: boolean): { entry: PackedBlob; written: Promise<void> } {
    const entry: PackedBlob = { id: blob.id, encrypted, comp: blob.comp, offset: this.size, length: blob.data.length, rawLength: blob.rawLength };
    this.blobs.push(entry);
    this.size += blob.data.length;
    const written = this.writer.then((w) => w.write([blob.data], entry.offset)).finally(() => release(blob.data));
    written.catch(() => {});
    this.writes.push(written);
    return { entry, written };
  }

  /** Writes the header, then makes the pack durable under its name. */
  async finish(key: MasterKey): Promise<FinishedPack> {
    const writer = await this.writer;
    try {
      await Promise.all(this.writes);
      const header = encodeMeta(key, 'pack-header', this.blobs.map(toRow));
      const len = Buffer.alloc(4);
      len.writeUInt32LE(header.length);
      await writer.write([header, len], this.size);
      await writer.commit();
      return { id: this.id, blobs: this.blobs, size: this.size + header.length + 4 };
    } catch (err) {
      await writer.abort();
      throw err;
    }
  }

  async abort(): Promise<void> {
    await Promise.allSettled(this.writes);
    await (await this.writer.catch(() => null))?.abort();
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

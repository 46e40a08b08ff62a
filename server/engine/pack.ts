import type { EncodedBlob } from './blob.ts';
import type { MasterKey } from './crypto.ts';
import { releasePrivate } from './release.ts';
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

/** Blobs are written to the pack file in runs of about this size (small blobs: one write for many). */
const WRITE_RUN = 1024 * 1024;

interface Run {
  parts: Uint8Array[];
  offset: number;
  bytes: number;
  done: Promise<void>;
  settle: (err?: unknown) => void;
}

/**
 * Streams one pack to storage: blobs are written at their offsets in runs of ~1 MiB as
 * they are added (their buffers released once written), so a pack is never held in
 * memory whole.
 */
export class PackWriter {
  readonly id = randomId();
  readonly blobs: PackedBlob[] = [];
  size = 0;
  private readonly writer: Promise<ObjectWriter>;
  private readonly writes: Promise<void>[] = [];
  private run: Run | null = null;

  constructor(backend: Backend) {
    this.writer = backend.createWriter(packName(this.id));
    this.writer.catch(() => {}); // surfaced by the first write or by finish
  }

  /** Appends a blob; the returned promise settles when its bytes are in the file. */
  add(blob: EncodedBlob, encrypted: boolean): Promise<void> {
    const entry: PackedBlob = { id: blob.id, encrypted, comp: blob.comp, offset: this.size, length: blob.data.length, rawLength: blob.rawLength };
    this.blobs.push(entry);
    this.size += blob.data.length;
    if (!this.run) {
      let settle!: Run['settle'];
      const done = new Promise<void>((resolve, reject) => {
        settle = (err) => (err ? reject(err) : resolve());
      });
      done.catch(() => {});
      this.run = { parts: [], offset: entry.offset, bytes: 0, done, settle };
    }
    const run = this.run;
    run.parts.push(blob.data);
    run.bytes += blob.data.length;
    if (run.bytes >= WRITE_RUN) this.flush();
    return run.done;
  }

  /** Writes the blobs gathered so far. */
  flush(): void {
    const run = this.run;
    this.run = null;
    if (!run) return;
    const write = this.writer
      .then((w) => w.write(run.parts, run.offset))
      .finally(() => {
        for (const part of run.parts) releasePrivate(part); // blobs arrive transferred from a worker: private
      });
    write.then(() => run.settle(), (err: unknown) => run.settle(err));
    this.writes.push(run.done);
  }

  /** Writes the header, then makes the pack durable under its name. */
  async finish(key: MasterKey): Promise<FinishedPack> {
    this.flush();
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
    const run = this.run;
    this.run = null;
    run?.settle(new Error('pack abandoned'));
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

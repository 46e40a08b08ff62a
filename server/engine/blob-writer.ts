import type { EncodedBlob } from './blob.ts';
import { EngineError } from './errors.ts';
import type { FinishedPack } from './pack.ts';
import { PackWriter, TARGET_PACK_SIZE, packName } from './pack.ts';
import type { EncodeOptions } from './pool.ts';
import type { Repository } from './repository.ts';

/**
 * The write side of a backup: sends chunks to the worker pool, drops the ones already
 * stored (unless deduplication is off), appends the rest to pack files, writes each full
 * pack, and every few packs an index file for the packs already durable (so a crashed
 * backup's data is reused by the next one). Memory is bounded: chunks in flight plus packs
 * waiting to be written stay under `limit` bytes.
 */
const INDEX_EVERY_PACKS = 4;

export class BlobWriter {
  private readonly repo: Repository;
  private readonly opts: EncodeOptions;
  private readonly dedup: boolean;
  private readonly limit: number;
  private pack: PackWriter | null = null;
  private readonly pending = new Set<string>(); // ids in packs not yet in an index file
  private unindexed: FinishedPack[] = [];
  private writing: Promise<void> = Promise.resolve();
  private held = 0;
  private waiters: (() => void)[] = [];
  private failure: unknown = null;
  storedBytes = 0;

  constructor(repo: Repository, opts: EncodeOptions, dedup: boolean, limit = 64 * 1024 * 1024) {
    this.repo = repo;
    this.opts = opts;
    this.dedup = dedup;
    this.limit = limit;
  }

  private async acquire(bytes: number): Promise<void> {
    while (this.held > 0 && this.held + bytes > this.limit) {
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    if (this.failure) throw this.failure;
    this.held += bytes;
  }

  private release(bytes: number): void {
    this.held -= bytes;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Stores one chunk (its buffer is transferred away); resolves to the chunk id. */
  async store(chunk: Uint8Array): Promise<() => Promise<string>> {
    const bytes = chunk.length;
    await this.acquire(bytes);
    const result = this.repo.pool.encode(this.repo.keyRef, this.opts, chunk).then(
      (blob) => {
        this.release(bytes);
        this.accept(blob);
        return blob.id;
      },
      (err) => {
        this.release(bytes);
        throw err;
      },
    );
    result.catch(() => {}); // observed by the caller through the returned thunk
    return () => result;
  }

  private accept(blob: EncodedBlob): void {
    const encrypted = this.opts.encrypt;
    if (this.dedup) {
      const key = blob.id + (encrypted ? 'e' : 'p');
      if (this.pending.has(key) || this.repo.index.has(blob.id, encrypted)) return;
      this.pending.add(key);
    }
    this.pack ??= new PackWriter();
    this.pack.add(blob, encrypted);
    if (this.pack.size >= TARGET_PACK_SIZE) this.rotate();
  }

  private rotate(): void {
    const writer = this.pack;
    this.pack = null;
    if (!writer) return;
    const pack = writer.finish(this.repo.key);
    const bytes = pack.bytes.length;
    this.held += bytes;
    this.writing = this.writing.then(async () => {
      if (this.failure) return;
      try {
        await this.repo.backend.put(packName(pack.id), [pack.bytes]);
        this.storedBytes += bytes;
        this.unindexed.push({ ...pack, bytes: new Uint8Array(0) });
        if (this.unindexed.length >= INDEX_EVERY_PACKS) await this.writeIndex();
      } catch (err) {
        this.failure = err instanceof EngineError ? err : new EngineError('STORAGE_ERROR', `cannot write to the repository: ${(err as Error).message}`, {}, { cause: err });
      } finally {
        this.release(bytes);
      }
    });
  }

  private async writeIndex(): Promise<void> {
    const packs = this.unindexed;
    this.unindexed = [];
    if (packs.length === 0) return;
    this.storedBytes += await this.repo.index.write(this.repo.backend, this.repo.key, packs);
    for (const p of packs) for (const b of p.blobs) this.pending.delete(b.id + (b.encrypted ? 'e' : 'p'));
  }

  /** Writes the last pack and an index for everything written. */
  async finish(): Promise<void> {
    this.rotate();
    await this.writing;
    if (this.failure) throw this.failure;
    await this.writeIndex();
  }

  /** After a cancel or failure: lets queued pack writes end (each is whole or absent), writes no index. */
  async abandon(): Promise<void> {
    this.pack = null;
    await this.writing;
  }
}

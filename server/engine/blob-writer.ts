import type { EncodedBlob } from './blob.ts';
import { Budget } from './budget.ts';
import { EngineError } from './errors.ts';
import type { FinishedPack } from './pack.ts';
import { PackWriter, TARGET_PACK_SIZE } from './pack.ts';
import type { EncodeOptions } from './pool.ts';
import type { SmallFile } from './worker.ts';
import { release } from './release.ts';
import type { Repository } from './repository.ts';

/**
 * The write side of a backup: sends chunks to the worker pool, drops the ones already
 * stored (unless deduplication is off), gathers the rest into packs, saves a pack at about
 * 16 MiB (while the next one fills), and every few packs writes an index file for the packs
 * already saved (so a crashed backup's data is reused by the next one). Memory is bounded:
 * chunks in flight to the workers, and encoded bytes not yet saved in a pack, each have a
 * byte budget.
 */
const INDEX_EVERY_PACKS = 4;
const CHUNKS_IN_FLIGHT = 16 * 1024 * 1024;
/** The pack being filled plus about two being saved. */
const UNWRITTEN = 48 * 1024 * 1024;
/** Counted per chunk on top of its bytes, so that many tiny chunks in flight are bounded too. */
const CHUNK_OVERHEAD = 32768;

export class BlobWriter {
  private readonly repo: Repository;
  private readonly opts: EncodeOptions;
  private readonly dedup: boolean;
  private pack: PackWriter | null = null;
  private readonly pending = new Set<string>(); // ids in packs not yet in an index file
  private unindexed: FinishedPack[] = [];
  private readonly closing = new Set<Promise<void>>();
  private readonly chunks = new Budget(CHUNKS_IN_FLIGHT);
  private readonly unwritten = new Budget(UNWRITTEN);
  private failure: unknown = null;
  storedBytes = 0;

  constructor(repo: Repository, opts: EncodeOptions, dedup: boolean) {
    this.repo = repo;
    this.opts = opts;
    this.dedup = dedup;
  }

  /** Stores one chunk (its buffer is transferred away); the returned thunk resolves to the chunk id. */
  async store(chunk: Uint8Array): Promise<() => Promise<string>> {
    const bytes = chunk.length + CHUNK_OVERHEAD;
    await this.unwritten.wait();
    await this.chunks.acquire(bytes);
    if (this.failure) {
      this.chunks.release(bytes);
      throw this.failure;
    }
    const result = this.repo.pool.encode(this.repo.keyRef, this.opts, chunk).then(
      (blob) => {
        this.chunks.release(bytes);
        this.accept(blob);
        return blob.id;
      },
      (err) => {
        this.chunks.release(bytes);
        throw err;
      },
    );
    result.catch(() => {}); // observed by the caller through the thunk
    return () => result;
  }

  /**
   * Has a worker read and store a small file as one chunk; the thunk resolves to its chunk
   * id and sha256, or tells that the file grew (stream it instead) or could not be read.
   */
  async storeFile(file: SmallFile): Promise<() => Promise<{ id: string; sha256: string } | { grew: true } | { error: string }>> {
    const bytes = file.size + CHUNK_OVERHEAD;
    await this.unwritten.wait();
    await this.chunks.acquire(bytes);
    if (this.failure) {
      this.chunks.release(bytes);
      throw this.failure;
    }
    const result = this.repo.pool.encodeFile(this.repo.keyRef, this.opts, file).then(
      (r) => {
        this.chunks.release(bytes);
        if (!('blob' in r)) return r;
        this.accept(r.blob);
        return { id: r.blob.id, sha256: r.sha256 };
      },
      (err) => {
        this.chunks.release(bytes);
        throw err;
      },
    );
    result.catch(() => {});
    return () => result;
  }

  private fail(err: unknown): void {
    this.failure ??= err instanceof EngineError ? err : new EngineError('STORAGE_ERROR', `cannot write to the repository: ${(err as Error).message}`, {}, { cause: err });
  }

  private accept(blob: EncodedBlob): void {
    if (this.failure) return; // abandoned: results still arriving from the workers are dropped
    const encrypted = this.opts.encrypt;
    if (this.dedup) {
      const key = blob.id + (encrypted ? 'e' : 'p');
      if (this.pending.has(key) || this.repo.index.has(blob.id, encrypted)) return;
      this.pending.add(key);
    }
    this.pack ??= new PackWriter(this.repo.backend);
    this.unwritten.take(blob.data.length);
    this.pack.add(blob, encrypted);
    if (this.pack.size >= TARGET_PACK_SIZE) this.rotate();
  }

  private rotate(): void {
    const pack = this.pack;
    this.pack = null;
    if (!pack) return;
    const bytes = pack.size;
    const close = (async () => {
      try {
        const finished = await pack.finish(this.repo.key);
        this.storedBytes += finished.size;
        this.unindexed.push(finished);
        if (this.unindexed.length >= INDEX_EVERY_PACKS) await this.writeIndex();
      } catch (err) {
        this.fail(err);
      } finally {
        this.unwritten.release(bytes);
      }
    })();
    this.closing.add(close);
    void close.finally(() => this.closing.delete(close));
  }

  private async writeIndex(): Promise<void> {
    const packs = this.unindexed;
    this.unindexed = [];
    if (packs.length === 0) return;
    this.storedBytes += await this.repo.index.write(this.repo.backend, this.repo.key, packs);
    for (const p of packs) for (const b of p.blobs) this.pending.delete(b.id + (b.encrypted ? 'e' : 'p'));
  }

  private async drain(): Promise<void> {
    while (this.closing.size > 0) await Promise.all([...this.closing]);
  }

  /** Closes the last pack and writes an index for everything written. */
  async finish(): Promise<void> {
    this.rotate();
    await this.drain();
    if (this.failure) throw this.failure;
    await this.writeIndex();
  }

  /** After a cancel or failure: drops the open pack, lets packs being closed finish (each whole or absent), writes no further index. */
  async abandon(): Promise<void> {
    this.fail(new EngineError('CANCELLED', 'the backup was abandoned'));
    const open = this.pack;
    this.pack = null;
    if (open) {
      open.abort();
      this.unwritten.release(open.size);
    }
    await this.drain();
  }
}

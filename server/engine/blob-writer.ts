import { dropBlob } from './blob.ts';
import type { EncodedBlob } from './blob.ts';
import type { BlobType } from './blob-table.ts';
import { Budget } from './budget.ts';
import { BlobTable } from './blob-table.ts';
import { EngineError, abortable, fromStorage } from './errors.ts';
import type { FinishedPack } from './pack.ts';
import type { Avoid } from './prune-marker.ts';
import { PACK_BLOBS, PackWriter, SLAB, TREE_PACK_SIZE } from './pack.ts';
import { DEFAULT_PACKING } from './storage/backend.ts';
import type { EncodeOptions, WorkerPool } from './pool.ts';
import type { SourceFile, SourceFileResult } from './worker.ts';
import type { Repository } from './repository.ts';

/**
 * The write side of a backup: sends blobs to the worker pool, drops the ones already stored
 * (unless deduplication is off), gathers the rest into packs, one open pack per blob type (file
 * data, trees), saves a pack once full (while the next one fills), and every few packs (or few
 * thousand blobs) writes an index file for the packs already saved (so a crashed backup's data is reused by the next one).
 * Memory is bounded: blobs in flight to the workers, and encoded bytes not yet saved in a pack,
 * each have a byte budget. Data packs close at the size the storage asks for (`Backend.packing`),
 * and the bytes not yet written out are bounded as it says.
 */
const INDEX_EVERY_PACKS = 8;
/** ...or every this many blobs, so that many small files do not keep many blob records waiting (each index file is a request to an object store). */
const INDEX_EVERY_BLOBS = 16384;
/**
 * Plaintext sent to the workers and not yet back in a pack: enough for two workers busy on 1 MiB
 * batches with more queued. A worker holds a blob more than once while it encodes it (plaintext,
 * compressed, sealed): 16 MiB here cost about 20 MB more of a backup's peak, at the same CPU.
 */
const IN_FLIGHT = 8 * 1024 * 1024;
/**
 * Small files sent to the workers and not yet back in a pack, as much again in a budget of their
 * own: with one budget for both, a large file's chunks (read on this thread as the walk goes on)
 * took all of it and left the worker without small files to read.
 */
const FILES_IN_FLIGHT = 8 * 1024 * 1024;
/** The largest blob a pack may take last (a chunk of 4 MiB, stored with its overhead). */
const MAX_BLOB = 5 * 1024 * 1024;
/**
 * Counted per blob on top of its bytes, so that many tiny blobs in flight are bounded too. At
 * 32 KiB the budget held about 240 small files, one batch: the worker then waited while the main
 * thread took its results and gathered the next batch. At 8 KiB, about 800 (three batches).
 */
const BLOB_OVERHEAD = 8192;
/** How long an abandoned backup waits for the packs being saved. */
const ABANDON_WAIT = 2000;
/** Trees are always compressed and encrypted, whatever the backup's options. */
const TREE_OPTIONS: EncodeOptions = { comp: 1, level: undefined, encrypt: true };

export type StoredFile = { id: Uint8Array | null; sha256: Uint8Array } | { grew: true } | { warning: string };

export class BlobWriter {
  private readonly repo: Repository;
  private readonly pool: WorkerPool;
  private readonly opts: EncodeOptions;
  private readonly dedup: boolean;
  private readonly packs: Record<BlobType, PackWriter | null> = { data: null, tree: null };
  /** Blobs in packs not yet in an index file (open, being saved, saved): what dedup must also skip. */
  private pending = new BlobTable(256);
  private readonly saving = new Set<PackWriter>();
  private unindexed: FinishedPack[] = [];
  private unindexedBlobs = 0;
  private readonly closing = new Set<Promise<void>>();
  private readonly inFlight: Budget;
  private readonly filesInFlight: Budget;
  /** Blob bytes handed to packs and not yet written out (a local directory writes them as the pack fills; an object store once it is sealed). */
  private readonly unwritten: Budget;
  private readonly written = (bytes: number): void => this.unwritten.release(bytes);
  private readonly signal: AbortSignal | undefined;
  private readonly dataPackBytes: number;
  private failure: unknown = null;
  storedBytes = 0;

  /** Candidates of running prunes: never reused. */
  private readonly avoid: Avoid | null;

  constructor(repo: Repository, pool: WorkerPool, opts: EncodeOptions, dedup: boolean, signal?: AbortSignal, avoid: Avoid | null = null) {
    this.repo = repo;
    this.pool = pool;
    this.opts = dedup ? { ...opts, skipSeen: true } : opts;
    this.dedup = dedup;
    this.avoid = avoid;
    this.signal = signal;
    this.inFlight = new Budget(IN_FLIGHT, signal);
    this.filesInFlight = new Budget(FILES_IN_FLIGHT, signal);
    const packing = repo.backend.packing ?? DEFAULT_PACKING;
    this.dataPackBytes = packing.dataPackBytes;
    // Below what is held until it can be written (packs kept until sealed, each with its last blob;
    // or a part-filled slab per open pack) nothing would ever be written: the backup would wait for good.
    const held = packing.writesAsFilled ? 2 * SLAB + MAX_BLOB : packing.dataPackBytes + TREE_PACK_SIZE + 2 * MAX_BLOB;
    this.unwritten = new Budget(Math.max(packing.unwrittenBytes, held), signal);
  }

  /** Waits for room, then runs `start`; the returned thunk resolves once the work is accepted into a pack. */
  private async admit<T>(bytes: number, start: () => Promise<T>, budget = this.inFlight): Promise<() => Promise<T>> {
    const held = bytes + BLOB_OVERHEAD;
    await this.unwritten.wait();
    await budget.acquire(held);
    if (this.failure) {
      budget.release(held);
      throw this.failure;
    }
    const result = start().finally(() => budget.release(held));
    result.catch(() => {}); // observed by the caller through the thunk
    return () => result;
  }

  /** Stores one chunk of file data (its buffer is transferred away); the thunk resolves to its id. */
  store(chunk: Uint8Array): Promise<() => Promise<Uint8Array>> {
    return this.admit(chunk.length, async () => this.accept(await this.pool.encode(this.opts, chunk), 'data', this.opts.encrypt));
  }

  /** Stores one tree (its plaintext encoding); the thunk resolves to the tree's id. */
  storeTree(plain: Uint8Array): Promise<() => Promise<Uint8Array>> {
    return this.admit(plain.length, async () => this.accept(await this.pool.encode(TREE_OPTIONS, plain), 'tree', true));
  }

  /**
   * Has a worker read and store a small file as one chunk; the thunk resolves to its chunk id
   * (null for an empty file) and sha256, or tells that the file grew (stream it instead) or why
   * it was not read.
   */
  storeFile(file: SourceFile): Promise<() => Promise<StoredFile>> {
    return this.admit(file.size, async () => this.fileStored(await this.pool.encodeFile(this.opts, file)), this.filesInFlight);
  }

  /** A small file's result from the pool: its blob accepted into a pack, or why it was not read. */
  private fileStored(r: SourceFileResult): StoredFile {
    if (!('blob' in r)) return r;
    return { id: r.blob ? this.accept(r.blob, 'data', this.opts.encrypt) : null, sha256: r.sha256 };
  }

  /**
   * As storeFile when both budgets have room now: the thunk at once, with no promise to wait for
   * first (a backup hands over its small files one by one, tens of thousands); null when the
   * caller must wait, with storeFile.
   */
  storeFileNow(file: SourceFile): (() => Promise<StoredFile>) | null {
    const held = file.size + BLOB_OVERHEAD;
    if (this.failure || this.unwritten.exceeded || !this.filesInFlight.tryAcquire(held)) return null;
    const result = this.pool.encodeFile(this.opts, file).then(
      (r): StoredFile => {
        try {
          return this.fileStored(r);
        } finally {
          this.filesInFlight.release(held);
        }
      },
      (err: unknown) => {
        this.filesInFlight.release(held);
        throw err;
      },
    );
    result.catch(() => {}); // observed by the caller through the thunk
    return () => result;
  }

  /** Whether a blob is in the repository and may be reused: indexed, and no running prune's candidate. */
  usable(id: Uint8Array, type: BlobType, encrypted: boolean): boolean {
    if (this.avoid === 'all' || this.avoid?.has(id, type, encrypted)) return false;
    return this.repo.index.has(id, type, encrypted);
  }

  private fail(err: unknown): void {
    this.failure ??= fromStorage(err);
    if (!(this.failure instanceof EngineError)) {
      this.failure = new EngineError('STORAGE_ERROR', `cannot write to the repository: ${(err as Error).message}`, {}, { cause: err });
    }
  }

  private accept(blob: EncodedBlob, type: BlobType, encrypted: boolean): Uint8Array {
    if (this.failure) {
      dropBlob(blob);
      return blob.id; // abandoned: results still arriving from the workers are dropped
    }
    if (this.dedup) {
      if (this.pending.has(blob.id, type, encrypted) || this.usable(blob.id, type, encrypted)) {
        dropBlob(blob);
        return blob.id;
      }
      this.pending.add(blob.id, type, encrypted, 0, 0, 0, 0, 0);
    }
    // Seen, and its first copy not here yet (still being encoded by another thread), or a
    // fingerprint shared with another id: encoded now after all.
    if (blob.seen) blob = this.pool.encodeSeen(this.opts, blob);
    const pack = (this.packs[type] ??= new PackWriter(this.repo.backend, type, this.written));
    this.unwritten.take(blob.data.length);
    pack.add(blob, encrypted);
    if (pack.size >= (type === 'tree' ? TREE_PACK_SIZE : this.dataPackBytes) || pack.blobs.count >= PACK_BLOBS) this.rotate(type);
    return blob.id;
  }

  private rotate(type: BlobType): void {
    const pack = this.packs[type];
    this.packs[type] = null;
    if (!pack) return;
    this.saving.add(pack);
    const close = (async () => {
      try {
        const finished = await pack.finish(this.repo.key);
        this.saving.delete(pack);
        this.storedBytes += finished.size;
        this.unindexed.push(finished);
        this.unindexedBlobs += finished.blobs.count;
        if (this.unindexed.length >= INDEX_EVERY_PACKS || this.unindexedBlobs >= INDEX_EVERY_BLOBS) await this.writeIndex();
      } catch (err) {
        this.fail(err);
      }
    })();
    this.closing.add(close);
    void close.finally(() => this.closing.delete(close));
  }

  private async writeIndex(): Promise<void> {
    const packs = this.unindexed;
    this.unindexed = [];
    this.unindexedBlobs = 0;
    if (packs.length === 0 || this.failure) return;
    this.storedBytes += await this.repo.index.write(this.repo.backend, this.repo.key, packs);
    // What is indexed now is found in the repository's index: the pending set starts over with the rest.
    this.pending = new BlobTable(256);
    const rest = [this.packs.data?.blobs, this.packs.tree?.blobs, ...[...this.saving].map((p) => p.blobs), ...this.unindexed.map((p) => p.blobs)];
    for (const list of rest) for (const b of list ?? []) this.pending.add(b.id, b.type, b.encrypted, 0, 0, 0, 0, 0);
  }

  private async drain(): Promise<void> {
    while (this.closing.size > 0) await Promise.all([...this.closing]);
  }

  /** Closes the open packs and writes an index for everything written. */
  async finish(): Promise<void> {
    this.rotate('data');
    this.rotate('tree');
    await abortable(this.drain(), this.signal);
    if (this.failure) throw this.failure;
    try {
      await abortable(this.writeIndex(), this.signal);
    } catch (err) {
      this.fail(err);
      throw this.failure;
    }
  }

  /**
   * After a cancel or failure: drops the open packs (their temp files removed), gives packs being saved up to 2 s to finish
   * (each whole or absent either way; a storage that does not answer is not waited for), writes
   * no further index.
   */
  async abandon(): Promise<void> {
    this.fail(new EngineError('CANCELLED', 'the backup was abandoned'));
    const aborted: Promise<void>[] = [];
    for (const type of ['data', 'tree'] as const) {
      aborted.push(this.packs[type]?.abort() ?? Promise.resolve());
      this.packs[type] = null;
    }
    await Promise.race([Promise.all([this.drain(), ...aborted]), new Promise((resolve) => setTimeout(resolve, ABANDON_WAIT).unref())]);
  }
}

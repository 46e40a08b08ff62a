import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { workerEnv } from '../compile-cache.ts';
import { blobKeys, decodeBlob, dropBlob, encodeHandedOver } from './blob.ts';
import type { BlobRef, EncodedBlob } from './blob.ts';
import type { BlobKeys, MasterKey } from './crypto.ts';
import { EngineError, fromPostedErrno, postedDecodeFailure } from './errors.ts';
import { owned, releasePrivate } from './release.ts';
import { SeenIds } from './seen-ids.ts';
import type { CompressionCode } from './types.ts';
import type { DecodedRun, RunBlob } from './run-reader.ts';
import { WRITE_BATCH_FILES } from './restore-write.ts';
import type { DecodeItem, DirListing, DirRequest, FileBatch, SourceFile, SourceFileResult, WorkerRequest, WriteAt, WriteOp, WriteResult } from './worker.ts';

/**
 * The worker threads of one operation (a backup, a restore, a verify) for the CPU-heavy work and
 * the source's file system calls, one per core by default (at most 8; a backup or a restore one
 * fewer, see WORKERS_BESIDE_MAIN): the first started with the first
 * work, each further one when the others all have work. Items are gathered into batches (one message per ~1 MiB or 256 items) so small files do
 * not pay a round trip each; buffers are transferred, not copied.
 * Because the pool belongs to one operation, `close()` can terminate its workers at once, even
 * one stuck in a system call, without touching any other job.
 * When every worker it may start has a backlog, the pool holds a chunk for its own thread instead
 * (see INLINE_BACKLOG), and decodes a chunk of a restore's multi-chunk file itself (the worker only
 * writes it); a restore's run of small files is decoded here while the writer has one queued (see
 * writerBacklogged): pure computation on memory, never a system call, which could not be stopped.
 */
export interface EncodeOptions {
  comp: CompressionCode;
  level: number | undefined;
  encrypt: boolean;
  /** A chunk whose id an operation's thread encoded before comes back `seen`, not encoded (see SeenIds): for a backup's data when it deduplicates. */
  skipSeen?: boolean;
}

type Settle = { resolve: (v: unknown) => void; reject: (e: unknown) => void };

interface Slot {
  worker: Worker;
  pendingBytes: number;
  pending: Map<number, { settle: Settle; bytes: number }>;
}

interface Batch {
  send: (items: unknown[], transfer: ArrayBuffer[]) => Promise<unknown[]>;
  items: unknown[];
  transfer: ArrayBuffer[];
  settles: Settle[];
  bytes: number;
  /** Items, or what they count for (a run of a restore's small files: its files). */
  count: number;
  limit: number;
}

/**
 * One worker fewer than the cores (at least one, at most 8), for an operation whose main thread
 * has work of its own besides feeding the workers (a backup's walk, large-file chunking and packs).
 */
export const WORKERS_BESIDE_MAIN = Math.min(Math.max(availableParallelism() - 1, 1), 8);

/**
 * A chunk is held for the pool's own thread only when the workers have at least this much queued
 * (plaintext sent and not answered, or waiting in a batch): each then has well over the time this
 * thread takes for one chunk before it could run dry. A worker whose backlog falls below it is
 * sent held chunks, so neither thread waits while the other has chunks queued (bound to a thread
 * as it was read, a chunk could wait in the worker's queue behind small files while this thread
 * had nothing to do).
 */
export const INLINE_BACKLOG = 4 * 1024 * 1024;
/**
 * ...and only a chunk up to this size (the chunker's maximum is 4 MiB; most chunks are 1–1.5 MiB):
 * one encode holds this thread's event loop for its whole length, 4–10 ms for 1 MiB of the real
 * tree and 40–54 ms for 4 MiB, measured at load 3. Its zstd output fits the thread's reused buffer (compress.ts).
 */
export const INLINE_MAX = 1536 * 1024;

export interface PoolOptions {
  /** The backlog from which a chunk is encoded (or a restore's chunk decoded) on this thread (INLINE_BACKLOG); 0: every chunk it may take, Infinity: none. */
  inlineBacklog?: number;
}

/** Messages to the writer (the one in hand, and those queued) from which a run is decoded here (see writerBacklogged). */
const DECODE_HERE_QUEUED = 2;
const BATCH_BYTES = 1 << 20;
const BATCH_ITEMS = 256;
/** A worker that keeps dying is not replaced beyond this. */
const MAX_RESPAWNS = 10;

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly key: MasterKey;
  private readonly size: number;
  private readonly batches = new Map<string, Batch>();
  private respawns = 0;
  private nextSeq = 1;
  private flushScheduled = false;
  private started = false;
  private closed = false;
  private readonly exits: Promise<void>[] = [];
  private readonly inlineBacklog: number;
  private blobKeys: BlobKeys | null = null;
  /** The chunk ids this operation's threads encoded (SeenIds), one table for this thread and every worker. */
  private readonly seenTable = SeenIds.table();
  private readonly seen = new SeenIds(this.seenTable);
  /**
   * Chunks held for whichever thread is free first: this one takes the oldest, one per turn of the
   * event loop; a worker whose backlog fell below the threshold is sent the newest.
   */
  private readonly held: { plain: Uint8Array; opts: EncodeOptions; resolve: (blob: EncodedBlob) => void; reject: (e: unknown) => void }[] = [];
  private encodeScheduled = false;
  /** Plaintext bytes encoded on this thread so far. */
  encodedHere = 0;
  /** Runs of a restore's small files decoded on this thread so far. */
  runsDecodedHere = 0;
  /** Chunks of a restore's multi-chunk files decoded on this thread so far. */
  chunksDecodedHere = 0;

  constructor(key: MasterKey, size = Math.min(Math.max(availableParallelism(), 1), 8), opts: PoolOptions = {}) {
    this.key = key;
    this.size = size;
    this.inlineBacklog = opts.inlineBacklog ?? INLINE_BACKLOG;
  }

  private spawn(): Slot {
    // A small young generation: the workers' objects are short-lived, and V8's default lets each hold tens of MB.
    const worker = new Worker(new URL('./worker.ts', import.meta.url), {
      workerData: { encryption: new Uint8Array(this.key.encryption), chunkId: new Uint8Array(this.key.chunkId), seen: this.seenTable },
      resourceLimits: { maxYoungGenerationSizeMb: 8 },
      env: workerEnv(),
    });
    worker.unref();
    const slot: Slot = { worker, pendingBytes: 0, pending: new Map() };
    worker.on('message', (msg: { seq: number; results?: unknown[]; error?: { code: string; message: string } }) => {
      const p = slot.pending.get(msg.seq);
      if (!p) return;
      slot.pending.delete(msg.seq);
      slot.pendingBytes -= p.bytes;
      if (slot.pending.size === 0) worker.unref();
      this.feed();
      if (msg.error) p.settle.reject(new EngineError(msg.error.code, msg.error.message));
      else p.settle.resolve(msg.results);
    });
    worker.on('error', (err) => this.fail(slot, err));
    worker.on('exit', (code) => this.fail(slot, new Error(`worker exited with code ${code}`)));
    return slot;
  }

  private fail(slot: Slot, err: Error): void {
    const index = this.slots.indexOf(slot);
    if (index < 0) return;
    const reason = this.closed ? new EngineError('CANCELLED', 'the operation was stopped') : new EngineError('INTERNAL_ERROR', `worker failed: ${err.message}`);
    for (const p of slot.pending.values()) p.settle.reject(reason);
    slot.pending.clear();
    if (this.closed || ++this.respawns > MAX_RESPAWNS) {
      this.slots.splice(index, 1);
      return;
    }
    this.slots[index] = this.spawn();
  }

  /** Terminates every worker now; whatever is pending rejects with CANCELLED. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const slot of [...this.slots]) {
      this.exits.push(slot.worker.terminate().then(() => {}, () => {}));
      this.fail(slot, new Error('closed'));
    }
    for (const batch of this.batches.values()) for (const s of batch.settles) s.reject(new EngineError('CANCELLED', 'the operation was stopped'));
    this.batches.clear();
    for (const job of this.held.splice(0)) {
      releasePrivate(job.plain);
      job.reject(new EngineError('CANCELLED', 'the operation was stopped'));
    }
  }

  /** Closes the pool and resolves once every worker has stopped (nothing it was doing goes on after). */
  async stopped(): Promise<void> {
    this.close();
    await Promise.all(this.exits);
  }

  /** `grow`: may start a further worker; 'writer': goes to the first worker, in order with everything sent there. */
  private post(build: (seq: number) => WorkerRequest, transfer: ArrayBuffer[], bytes: number, grow: boolean | 'writer' = true): Promise<unknown[]> {
    if (this.closed) return Promise.reject(new EngineError('CANCELLED', 'the operation was stopped'));
    if (!this.started) {
      this.started = true;
      this.slots.push(this.spawn());
    }
    let slot = this.slots[0];
    if (!slot) return Promise.reject(new EngineError('INTERNAL_ERROR', 'no worker is running'));
    if (grow !== 'writer') for (const s of this.slots) if (s.pendingBytes < slot.pendingBytes) slot = s;
    // A further worker starts once every worker has work: one that only lists directories (an
    // unchanged backup) keeps one thread, and its start-up and memory; listings never start one.
    if (grow === true && slot.pending.size > 0 && this.slots.length < this.size) {
      slot = this.spawn();
      this.slots.push(slot);
    }
    const seq = this.nextSeq++;
    const chosen = slot;
    return new Promise((resolve, reject) => {
      chosen.pending.set(seq, { settle: { resolve: resolve as (v: unknown) => void, reject }, bytes });
      chosen.pendingBytes += bytes;
      chosen.worker.ref();
      chosen.worker.postMessage(build(seq), transfer);
    });
  }

  /** Hash, compress and (optionally) encrypt one blob. The buffer is transferred away (or freed here once encoded). */
  encode(opts: EncodeOptions, chunk: Uint8Array): Promise<EncodedBlob> {
    if (this.takesHere(chunk.length)) return this.hold(opts, chunk);
    return this.toWorker(opts, chunk);
  }

  private toWorker(opts: EncodeOptions, chunk: Uint8Array): Promise<EncodedBlob> {
    const key = `e:${opts.comp}:${opts.level}:${opts.encrypt}:${opts.skipSeen === true}`;
    return this.enqueue(key, chunk, chunk.buffer as ArrayBuffer, chunk.length, (items, transfer) =>
      this.post((seq) => ({ type: 'encode', seq, ...opts, items: items as Uint8Array[] }), transfer, sum(items as Uint8Array[])),
    ) as Promise<EncodedBlob>;
  }

  /** The least busy worker's backlog: plaintext sent and not answered, and what waits in a batch. */
  private backlog(): number {
    let backlog = Math.min(...this.slots.map((s) => s.pendingBytes));
    for (const batch of this.batches.values()) backlog += batch.bytes;
    return backlog;
  }

  /**
   * Whether a chunk of `bytes` is encoded (or a restore's chunk decoded) on this thread: the pool
   * starts no further worker, and even the least busy one has a backlog.
   */
  private takesHere(bytes: number): boolean {
    if (this.closed || bytes > INLINE_MAX || this.slots.length < this.size) return false;
    return this.backlog() >= this.inlineBacklog;
  }

  /** The blob keys for encoding and decoding on this thread, derived at the first use. */
  private keys(): BlobKeys {
    return (this.blobKeys ??= blobKeys(this.key));
  }

  /** Holds a chunk to be encoded on a later turn of the event loop (the caller goes on reading), or by a worker that runs low; close() cancels what waits. */
  private hold(opts: EncodeOptions, plain: Uint8Array): Promise<EncodedBlob> {
    return new Promise((resolve, reject) => {
      this.held.push({ plain, opts, resolve, reject });
      this.scheduleEncode();
    });
  }

  private scheduleEncode(): void {
    if (this.encodeScheduled || this.held.length === 0) return;
    this.encodeScheduled = true;
    setImmediate(() => {
      this.encodeScheduled = false;
      this.encodeNext();
    });
  }

  private encodeNext(): void {
    const job = this.held.shift();
    if (!job) return; // cancelled, or taken by a worker
    const bytes = job.plain.length;
    try {
      const blob = encodeHandedOver(this.keys(), job.plain, job.opts.comp, job.opts.level, job.opts.encrypt, job.opts.skipSeen ? this.seen : undefined);
      if (!blob.seen) this.encodedHere += bytes;
      job.resolve(blob);
    } catch (err) {
      job.reject(new EngineError('INTERNAL_ERROR', `cannot encode a blob: ${(err as Error).message}`));
    }
    this.scheduleEncode();
  }

  /**
   * Encodes a blob that came back `seen` on this thread now, after all (its first copy was not
   * stored yet, or another id shared its fingerprint); its plaintext is freed (or released).
   */
  encodeSeen(opts: EncodeOptions, blob: EncodedBlob): EncodedBlob {
    const plain = owned(blob.data); // a view of a batch is copied out, and the batch released
    if (plain !== blob.data) dropBlob(blob);
    this.encodedHere += plain.length;
    return encodeHandedOver(this.keys(), plain, opts.comp, opts.level, opts.encrypt);
  }

  /** Sends held chunks to the workers while their backlog is below the threshold. */
  private feed(): void {
    while (this.held.length > 0 && !this.closed && this.backlog() < this.inlineBacklog) {
      const job = this.held.pop()!;
      this.toWorker(job.opts, job.plain).then(job.resolve, job.reject);
    }
  }

  /** Read a small file through its directory handle and encode it as one chunk (with its sha256). */
  encodeFile(opts: EncodeOptions, file: SourceFile): Promise<SourceFileResult> {
    const key = `f:${opts.comp}:${opts.level}:${opts.encrypt}:${opts.skipSeen === true}`;
    return this.enqueue(key, file, null, file.size, (items, transfer) => {
      const files = items as SourceFile[];
      const request = (seq: number): WorkerRequest => ({ type: 'encodeFiles', seq, ...opts, items: files });
      return this.post(request, transfer, files.reduce((n, f) => n + f.size, 0)).then((batch) => fileResults(batch as unknown as FileBatch));
    }) as Promise<SourceFileResult>;
  }

  /** List an open directory of the source, with every entry's lstat (and a symlink's target). */
  listDir(req: DirRequest): Promise<DirListing> {
    return this.enqueue('l', req, null, 0, (items, transfer) => this.post((seq) => ({ type: 'listDir', seq, items: items as DirRequest[] }), transfer, 0, false)) as Promise<DirListing>;
  }

  /** Decrypt, decompress and check one stored blob; rejects with CORRUPT_DATA on mismatch. */
  decode(blob: BlobRef, data: Uint8Array): Promise<Uint8Array> {
    return this.decodeItem(blob, data, undefined) as Promise<Uint8Array>;
  }

  /**
   * Like decode, and the worker writes the plaintext at `write.position` of the file open as
   * `write.fd` instead of sending it back; a failed write rejects with its errno code. The
   * descriptor must stay open until this settles, or until `stopped()` once the pool is closed.
   */
  async decodeTo(blob: BlobRef, data: Uint8Array, write: WriteAt): Promise<void> {
    await this.decodeItem(blob, data, write);
  }

  private async decodeItem(blob: BlobRef, data: Uint8Array, write: WriteAt | undefined): Promise<Uint8Array | undefined> {
    let result: { data?: Uint8Array; error?: { code: string; message: string; errno?: boolean } };
    if (write && this.takesHere(blob.rawLength)) {
      // Decoded here at once, as a run of small files is (see decodeRun); the worker only writes it.
      this.chunksDecodedHere++;
      let plain: Uint8Array;
      try {
        plain = owned(decodeBlob(this.keys(), blob, data));
      } catch (err) {
        plain = new Uint8Array(0);
        result = { error: postedDecodeFailure(err) };
      }
      // A view of a larger buffer is the caller's; a whole one was handed over, as it is to a worker.
      if (plain.buffer !== data.buffer && data.byteLength === data.buffer.byteLength) releasePrivate(data);
      result ??= (await this.enqueue('d', { ref: blob, data: plain, write, decoded: true }, plain.buffer as ArrayBuffer, 0, this.sendDecodes)) as typeof result;
    } else {
      const whole = owned(data);
      result = (await this.enqueue('d', write ? { ref: blob, data: whole, write } : { ref: blob, data: whole }, whole.buffer as ArrayBuffer, whole.length, this.sendDecodes)) as typeof result;
    }
    if (result.error?.errno) throw fromPostedErrno(result.error);
    if (result.error) throw new EngineError(result.error.code, result.error.message, { chunk: Buffer.from(blob.id).toString('hex') });
    return result.data;
  }

  /** A decode's backlog: the plaintext the worker has to make (none for a chunk decoded here). */
  private readonly sendDecodes: Batch['send'] = (items, transfer) =>
    this.post((seq) => ({ type: 'decode', seq, items: items as DecodeItem[] }), transfer, (items as DecodeItem[]).reduce((n, i) => n + (i.decoded ? 0 : i.ref.rawLength), 0));

  /**
   * Decode the blobs of one run of a pack (`data`, transferred away); the plaintexts come back in
   * one buffer. A run with a restore's small files goes to the writer (see `write`).
   */
  async decodeRun(blobs: RunBlob[], data: Uint8Array): Promise<DecodedRun> {
    const whole = owned(data);
    if (blobs.some((b) => b.file)) {
      // Decoded at once, not on a later turn: the writer takes its ops in the order they were asked.
      if (this.writerBacklogged()) {
        const run = decodeRunHere(this.keys(), blobs, whole);
        this.runsDecodedHere++;
        return (await this.write({ op: 'run', blobs: run.blobs, data: run.data, decoded: true }, run.data.buffer as ArrayBuffer, blobs.length)) as DecodedRun;
      }
      return (await this.write({ op: 'run', blobs, data: whole }, whole.buffer as ArrayBuffer, blobs.length)) as DecodedRun;
    }
    return (await this.enqueue('r', { blobs, data: whole }, whole.buffer as ArrayBuffer, whole.length, (items, transfer) =>
      this.post((seq) => ({ type: 'decodeRuns', seq, items: items as { blobs: RunBlob[]; data: Uint8Array }[] }), transfer, transfer.reduce((n, b) => n + b.byteLength, 0)),
    )) as DecodedRun;
  }

  /**
   * Whether the writer has more queued than the message it is working on: a run of a restore's
   * small files is then decoded on this thread, and the writer only writes it (it creates every
   * file, and is the restore's busiest thread).
   */
  private writerBacklogged(): boolean {
    const writer = this.slots[0];
    return !this.closed && writer !== undefined && writer.pending.size + (this.batches.has('w') ? 1 : 0) >= DECODE_HERE_QUEUED;
  }

  /**
   * One of a restore's changes to its target (worker.ts, WriteOp), done by the writer, the first
   * worker, in the order asked; `files`: how many small files it writes. A further worker, if
   * any, decodes only the chunks of multi-chunk files. An op without files (making or releasing
   * a directory) waits to go with the next files, or until `flushWrites`: a message of its own
   * per directory cost the real tree's restore about a sixth more CPU.
   */
  write(op: WriteOp, buffer: ArrayBuffer | null = null, files = 0): Promise<WriteResult> {
    return this.enqueue(
      'w',
      op,
      buffer,
      buffer?.byteLength ?? 0,
      (items, transfer) => this.post((seq) => ({ type: 'write', seq, items: items as WriteOp[] }), transfer, transfer.reduce((n, b) => n + b.byteLength, 0), 'writer'),
      files,
      WRITE_BATCH_FILES,
      files === 0,
    ) as Promise<WriteResult>;
  }

  /** Sends what waits for the writer (see `write`) at the end of this turn of the event loop. */
  flushWrites(): void {
    if (this.batches.has('w')) this.scheduleFlush();
  }

  private enqueue(key: string, item: unknown, buffer: ArrayBuffer | null, bytes: number, send: Batch['send'], count = 1, limit = BATCH_ITEMS, wait = false): Promise<unknown> {
    if (this.closed) return Promise.reject(new EngineError('CANCELLED', 'the operation was stopped'));
    let batch = this.batches.get(key);
    if (!batch) {
      batch = { send, items: [], transfer: [], settles: [], bytes: 0, count: 0, limit };
      this.batches.set(key, batch);
    }
    const promise = new Promise((resolve, reject) => batch.settles.push({ resolve, reject }));
    batch.items.push(item);
    if (buffer) batch.transfer.push(buffer);
    batch.bytes += bytes;
    batch.count += count;
    if (batch.bytes >= BATCH_BYTES || batch.count >= batch.limit || batch.items.length >= BATCH_ITEMS) this.flush(key, batch);
    else if (!wait) this.scheduleFlush();
    return promise;
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      for (const [k, b] of this.batches) this.flush(k, b);
    });
  }

  private flush(key: string, batch: Batch): void {
    this.batches.delete(key);
    batch.send(batch.items, batch.transfer).then(
      (results) => batch.settles.forEach((s, i) => s.resolve(results[i])),
      (err: unknown) => batch.settles.forEach((s) => s.reject(err)),
    );
  }
}

/**
 * A worker's FileBatch as one result per file (ids and sums are views of its one buffer, the
 * blobs views of `data`, freed once every blob of the batch was copied into a pack or dropped).
 */
function fileResults(batch: FileBatch): SourceFileResult[] {
  const { data, sums, comps, lengths, seen } = batch;
  let left = batch.out.filter((o) => typeof o === 'number').length;
  const release = (): void => {
    if (--left === 0) releasePrivate(data);
  };
  let at = 0;
  return batch.out.map((o, i): SourceFileResult => {
    if (o === true) return { grew: true };
    if (typeof o === 'string') return { warning: o };
    const sha256 = sums.subarray(i * 64 + 32, i * 64 + 64);
    if (o === null) return { blob: null, sha256 };
    at += o;
    const blob: EncodedBlob = { id: sums.subarray(i * 64, i * 64 + 32), data: data.subarray(at - o, at), comp: comps[i] as CompressionCode, rawLength: lengths[i]!, release };
    if (seen[i] === 1) blob.seen = true;
    return { blob, sha256 };
  });
}

/**
 * The blobs of a run decoded here, as a writer's `run` with `decoded` takes them: the plaintexts
 * one after another in a new buffer (`data` is freed), each blob's offset and length now in it,
 * a blob that does not decode marked with its error.
 */
function decodeRunHere(keys: BlobKeys, blobs: RunBlob[], data: Uint8Array): { blobs: RunBlob[]; data: Uint8Array } {
  let room = 0;
  for (const b of blobs) room += b.ref.rawLength;
  const out = new Uint8Array(room);
  let at = 0;
  const placed = blobs.map((b): RunBlob => {
    try {
      const plain = decodeBlob(keys, b.ref, data.subarray(b.offset, b.offset + b.length));
      const moved = { ...b, offset: at, length: plain.length };
      out.set(plain, at);
      at += plain.length;
      if (plain.buffer !== data.buffer) releasePrivate(plain); // read its length first: freed, it has none
      return moved;
    } catch (err) {
      return { ...b, offset: at, length: 0, error: postedDecodeFailure(err) };
    }
  });
  releasePrivate(data);
  return { blobs: placed, data: out };
}

function sum(items: Uint8Array[]): number {
  return items.reduce((n, b) => n + b.length, 0);
}

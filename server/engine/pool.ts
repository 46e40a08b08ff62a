import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { BlobRef, EncodedBlob } from './blob.ts';
import type { MasterKey } from './crypto.ts';
import { EngineError } from './errors.ts';
import type { CompressionCode } from './types.ts';
import type { SmallFile, SmallFileResult, WorkerRequest } from './worker.ts';

/**
 * A fixed set of worker threads for the CPU-heavy work. Single chunks are gathered into
 * batches (one message per ~1 MiB or 256 items) so small files do not pay a round trip each;
 * buffers are transferred, not copied.
 */
export interface EncodeOptions {
  comp: CompressionCode;
  level: number | undefined;
  encrypt: boolean;
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
}

const BATCH_BYTES = 1 << 20;
const BATCH_ITEMS = 256;

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly keys = new Map<number, MasterKey>();
  private readonly batches = new Map<string, Batch>();
  private nextRef = 1;
  private respawns = 0;
  private nextSeq = 1;
  private flushScheduled = false;

  constructor(size = Math.min(Math.max(availableParallelism(), 1), 8)) {
    for (let i = 0; i < size; i++) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    // A small young generation: the workers' objects are short-lived, and V8's default lets each hold tens of MB.
    const worker = new Worker(new URL('./worker.ts', import.meta.url), { resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    worker.unref();
    const slot: Slot = { worker, pendingBytes: 0, pending: new Map() };
    worker.on('message', (msg: { seq: number; results?: unknown[]; error?: { code: string; message: string } }) => {
      const p = slot.pending.get(msg.seq);
      if (!p) return;
      slot.pending.delete(msg.seq);
      slot.pendingBytes -= p.bytes;
      if (slot.pending.size === 0) worker.unref();
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
    for (const p of slot.pending.values()) p.settle.reject(new EngineError('INTERNAL_ERROR', `worker failed: ${err.message}`));
    slot.pending.clear();
    if (++this.respawns > 10) {
      this.slots.splice(index, 1); // a worker that keeps dying is not replaced
      return;
    }
    const fresh = this.spawn();
    for (const [ref, key] of this.keys) fresh.worker.postMessage(keyMessage(ref, key));
    this.slots[index] = fresh;
  }

  registerKey(key: MasterKey): number {
    const ref = this.nextRef++;
    this.keys.set(ref, key);
    for (const slot of this.slots) slot.worker.postMessage(keyMessage(ref, key));
    return ref;
  }

  forgetKey(ref: number): void {
    this.keys.delete(ref);
    for (const slot of this.slots) slot.worker.postMessage({ type: 'forget', ref } satisfies WorkerRequest);
  }

  private post(build: (seq: number) => WorkerRequest, transfer: ArrayBuffer[], bytes: number): Promise<unknown[]> {
    let slot = this.slots[0];
    if (!slot) return Promise.reject(new EngineError('INTERNAL_ERROR', 'no worker is running'));
    for (const s of this.slots) if (s.pendingBytes < slot.pendingBytes) slot = s;
    const seq = this.nextSeq++;
    const chosen = slot;
    return new Promise((resolve, reject) => {
      const slot = chosen;
      slot.pending.set(seq, { settle: { resolve: resolve as (v: unknown) => void, reject }, bytes });
      slot.pendingBytes += bytes;
      slot.worker.ref();
      slot.worker.postMessage(build(seq), transfer);
    });
  }

  /** Hash, compress and (optionally) encrypt one chunk. The chunk's buffer is transferred away. */
  encode(ref: number, opts: EncodeOptions, chunk: Uint8Array): Promise<EncodedBlob> {
    const key = `e:${ref}:${opts.comp}:${opts.level}:${opts.encrypt}`;
    return this.enqueue(key, chunk, chunk.buffer as ArrayBuffer, chunk.length, (items, transfer) =>
      this.post((seq) => ({ type: 'encode', seq, ref, ...opts, items: items as Uint8Array[] }), transfer, sum(items as Uint8Array[])),
    ) as Promise<EncodedBlob>;
  }

  /** Read a small file in a worker and encode it as one chunk (with its sha256). */
  encodeFile(ref: number, opts: EncodeOptions, file: SmallFile): Promise<SmallFileResult> {
    const key = `f:${ref}:${opts.comp}:${opts.level}:${opts.encrypt}`;
    return this.enqueue(key, file, null, file.size, (items, transfer) =>
      this.post((seq) => ({ type: 'encodeFiles', seq, ref, ...opts, items: items as SmallFile[] }), transfer, (items as SmallFile[]).reduce((n, f) => n + f.size, 0)),
    ) as Promise<SmallFileResult>;
  }

  /** Decrypt, decompress and check one stored blob; rejects with CORRUPT_DATA on mismatch. */
  async decode(ref: number, blob: BlobRef, data: Uint8Array): Promise<Uint8Array> {
    const owned = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength ? data : new Uint8Array(data);
    const result = (await this.enqueue(`d:${ref}`, { ref: blob, data: owned }, owned.buffer as ArrayBuffer, owned.length, (items, transfer) =>
      this.post((seq) => ({ type: 'decode', seq, ref, items: items as { ref: BlobRef; data: Uint8Array }[] }), transfer, transfer.reduce((n, b) => n + b.byteLength, 0)),
    )) as { data?: Uint8Array; error?: { code: string; message: string } };
    if (result.error) throw new EngineError(result.error.code, result.error.message, { chunk: blob.id });
    return result.data!;
  }

  private enqueue(key: string, item: unknown, buffer: ArrayBuffer | null, bytes: number, send: Batch['send']): Promise<unknown> {
    let batch = this.batches.get(key);
    if (!batch) {
      batch = { send, items: [], transfer: [], settles: [], bytes: 0 };
      this.batches.set(key, batch);
    }
    const promise = new Promise((resolve, reject) => batch.settles.push({ resolve, reject }));
    batch.items.push(item);
    if (buffer) batch.transfer.push(buffer);
    batch.bytes += bytes;
    if (batch.bytes >= BATCH_BYTES || batch.items.length >= BATCH_ITEMS) this.flush(key, batch);
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        for (const [k, b] of this.batches) this.flush(k, b);
      });
    }
    return promise;
  }

  private flush(key: string, batch: Batch): void {
    this.batches.delete(key);
    batch.send(batch.items, batch.transfer).then(
      (results) => batch.settles.forEach((s, i) => s.resolve(results[i])),
      (err) => batch.settles.forEach((s) => s.reject(err)),
    );
  }
}

function keyMessage(ref: number, key: MasterKey): WorkerRequest {
  return { type: 'key', ref, encryption: new Uint8Array(key.encryption), chunkId: new Uint8Array(key.chunkId) };
}

function sum(items: Uint8Array[]): number {
  return items.reduce((n, b) => n + b.length, 0);
}

let shared: WorkerPool | undefined;

/** The process-wide pool, started on first use. */
export function sharedPool(): WorkerPool {
  shared ??= new WorkerPool();
  return shared;
}

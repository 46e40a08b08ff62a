import type { BlobLocation } from './blob-table.ts';
import type { BlobRef } from './blob.ts';
import { EngineError, cancelled, fromPostedErrno, whenAborted } from './errors.ts';
import { WRITE_BATCH_FILES, type SmallFile } from './restore-write.ts';

/**
 * Reads small blobs (a small file's single chunk) in runs: the reads asked for within one turn
 * of the event loop are grouped by pack and sorted by offset, blobs that lie close together are
 * read with one ranged load, and each run goes to a worker as one buffer, which sends the
 * plaintexts back as one buffer. Restoring many small files then costs a storage read and a
 * thread round trip per run instead of per file (each file's own load and decode, with their
 * transfers, had been most of the restore's main-thread time).
 */
export interface RunBlob {
  ref: BlobRef;
  /** Where the blob is in the run's buffer. */
  offset: number;
  length: number;
  /** A small file of a restore to write with the plaintext there and then (restore-write.ts), instead of sending it back. */
  file?: SmallFile;
  /** Why it could not be decoded, when the run was decoded before it was sent (see WriteOp `run`). */
  error?: { code: string; message: string };
}

export interface DecodedRun {
  /** The plaintexts, one after the other; blob i is `data[ends[i-1] .. ends[i]]`. */
  data: Uint8Array;
  ends: number[];
  /** Per blob: why it could not be decoded (or its file written: `errno`, the system's code), or null. */
  errors: ({ code: string; message: string; errno?: boolean } | null)[];
}

/** What decodes a run: the worker pool (pool.ts). */
export interface RunDecoder {
  decodeRun(blobs: RunBlob[], data: Uint8Array): Promise<DecodedRun>;
}

/** Blobs this far apart in a pack are still read in one load (the bytes between are read and dropped). */
const GAP = 64 * 1024;
const RUN_BYTES = 4 * 1024 * 1024;
/** Nor more blobs than a restore's writer takes in one message (restore-write.ts), so that the next can wait queued. */
const RUN_BLOBS = WRITE_BATCH_FILES;

type Load = (loc: { pack: string; offset: number; length: number }) => Promise<Uint8Array>;

/**
 * One read of a run: settled once, by the run's answer or the signal. A caller that reads many
 * small files gives a record of its own whose methods do what comes next (restore.ts), instead
 * of a promise per read.
 */
export interface RunRead {
  readonly loc: BlobLocation;
  readonly file: SmallFile | undefined;
  /** The plaintext (a view of the run's buffer), or null when the worker wrote `file` with it. */
  resolve(data: Uint8Array | null): void;
  reject(err: unknown): void;
}
type Pending = RunRead;

export class RunReader {
  private pending: Pending[] = [];
  private scheduled = false;
  private readonly load: Load;
  private readonly single: (loc: BlobLocation) => Promise<Uint8Array>;
  private readonly pool: RunDecoder;
  private readonly signal: AbortSignal | undefined;
  /** Runs being read or decoded: rejected at once when the signal aborts. */
  private readonly inFlight = new Set<Pending[]>();

  /**
   * `load` reads a range of a pack (with the storage's failures already in engine terms);
   * `single` reads one blob on its own, following it when a prune has moved it since the index
   * was loaded — used for each blob of a run whose pack is gone. Every read rejects with
   * CANCELLED as soon as `signal` aborts: one listener for the reader, not a wrapping promise
   * per read (those outlived the young generation's collections by the thousand).
   */
  constructor(pool: RunDecoder, load: Load, single: (loc: BlobLocation) => Promise<Uint8Array>, signal?: AbortSignal) {
    this.pool = pool;
    this.load = load;
    this.single = single;
    this.signal = signal;
    if (signal) whenAborted(signal, () => this.cancel());
  }

  private cancel(): void {
    const err = cancelled();
    for (const p of this.pending) p.reject(err);
    this.pending = [];
    for (const run of this.inFlight) for (const p of run) p.reject(err);
    this.inFlight.clear();
  }

  /**
   * The plaintext of a data blob, checked: a view of a buffer shared with other blobs of its run
   * (never release it). With `file`, the worker writes the file with it instead and the answer
   * is null (or the plaintext, when the blob had to be read on its own: the caller writes it).
   */
  read(loc: BlobLocation): Promise<Uint8Array>;
  read(loc: BlobLocation, file: SmallFile): Promise<Uint8Array | null>;
  read(loc: BlobLocation, file?: SmallFile): Promise<Uint8Array | null> {
    if (this.signal?.aborted) return Promise.reject(cancelled());
    return new Promise((resolve, reject) => this.submit({ loc, file, resolve, reject }));
  }

  /** Like read, settling `read` itself; once the signal aborted, it is rejected at once. */
  submit(read: RunRead): void {
    if (this.signal?.aborted) {
      read.reject(cancelled());
      return;
    }
    this.pending.push(read);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const batch = this.pending;
      this.pending = [];
      for (const run of runs(batch)) void this.readRun(run);
    });
  }

  private async readRun(run: Pending[]): Promise<void> {
    const first = run[0]!.loc;
    const last = run.at(-1)!.loc;
    this.inFlight.add(run);
    try {
      const data = await this.load({ pack: first.pack, offset: first.offset, length: last.offset + last.length - first.offset });
      const blobs = run.map(({ loc, file }): RunBlob => ({ ref: { id: loc.id, encrypted: loc.encrypted, comp: loc.comp, rawLength: loc.rawLength }, offset: loc.offset - first.offset, length: loc.length, ...(file ? { file } : {}) }));
      const decoded = await this.pool.decodeRun(blobs, data);
      if (!this.inFlight.has(run)) return; // cancelled meanwhile: settled already
      run.forEach((p, i) => {
        const error = decoded.errors[i];
        if (error?.errno) p.reject(fromPostedErrno(error));
        else if (error) p.reject(new EngineError(error.code, error.message, { chunk: Buffer.from(p.loc.id).toString('hex') }));
        else p.resolve(p.file ? null : decoded.data.subarray(i === 0 ? 0 : decoded.ends[i - 1], decoded.ends[i]));
      });
    } catch (err) {
      if (!this.inFlight.has(run)) return;
      const packGone = err instanceof EngineError && err.details.missing === true && !this.signal?.aborted;
      for (const p of run) {
        if (packGone)
          this.single(p.loc).then(
            (data) => p.resolve(data),
            (e: unknown) => p.reject(e),
          );
        else p.reject(err);
      }
    } finally {
      this.inFlight.delete(run);
    }
  }
}

/** Reads grouped by pack, in offset order, cut where blobs lie far apart or a run grows large or long. */
function runs(batch: Pending[]): Pending[][] {
  batch.sort((a, b) => (a.loc.pack < b.loc.pack ? -1 : a.loc.pack > b.loc.pack ? 1 : a.loc.offset - b.loc.offset));
  const out: Pending[][] = [];
  let run: Pending[] = [];
  for (const p of batch) {
    const prev = run.at(-1)?.loc;
    const start = run[0]?.loc.offset ?? 0;
    if (prev && (prev.pack !== p.loc.pack || p.loc.offset - (prev.offset + prev.length) > GAP || p.loc.offset + p.loc.length - start > RUN_BYTES || run.length >= RUN_BLOBS)) {
      out.push(run);
      run = [];
    }
    run.push(p);
  }
  if (run.length > 0) out.push(run);
  return out;
}

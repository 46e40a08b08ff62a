import { hash } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { blobKeys, decodeBlob, encodeBlobInto, encodeHandedOver } from './blob.ts';
import type { BlobRef, EncodedBlob } from './blob.ts';
import { HMAC_BLOCK, PrefixedChunkId, SEAL_OVERHEAD } from './crypto.ts';
import { postedDecodeFailure, postedErrno } from './errors.ts';
import type { PostedErrno } from './errors.ts';
import { owned, releasePrivate } from './release.ts';
import { SeenIds } from './seen-ids.ts';
import { listDirectory } from './listing.ts';
import { DIR_FLAGS, FILE_FLAGS, atPath, changedSinceWalk, openFailure } from './source.ts';
import type { DecodedRun, RunBlob } from './run-reader.ts';
import { writeSmallFile } from './restore-write.ts';
import type { SmallFile } from './restore-write.ts';
import type { CompressionCode } from './types.ts';

/**
 * Worker side of pool.ts: the source's directories listed and its small files read (through
 * directory handles the main thread holds, see source.ts; a file is opened and closed within one
 * call), keyed hashing, compression and encryption of blobs, and the
 * reverse (with a restore's small files written as their chunks are decoded). Everything here is synchronous; a worker stuck in a system call is terminated by its
 * pool, never waited for.
 */
/** Where a decoded blob is written (a restore's multi-chunk file, open in the main thread): a positional write, nothing sent back. */
export interface WriteAt {
  fd: number;
  position: number;
}

/** A blob to decode, sent back or written (`write`); `decoded`: the pool's own thread decoded it already, and `data` is its plaintext. */
export interface DecodeItem {
  ref: BlobRef;
  data: Uint8Array;
  write?: WriteAt;
  decoded?: boolean;
}

export type WorkerRequest =
  | { type: 'encode'; seq: number; comp: CompressionCode; level: number | undefined; encrypt: boolean; skipSeen?: boolean; items: Uint8Array[] }
  | { type: 'decode'; seq: number; items: DecodeItem[] }
  | { type: 'decodeRuns'; seq: number; items: { blobs: RunBlob[]; data: Uint8Array }[] }
  | { type: 'encodeFiles'; seq: number; comp: CompressionCode; level: number | undefined; encrypt: boolean; skipSeen?: boolean; items: SourceFile[] }
  | { type: 'listDir'; seq: number; items: DirRequest[] }
  | { type: 'write'; seq: number; items: WriteOp[] };

/**
 * What a restore has its writer (one worker) do, in the order asked: only one thread creates
 * entries (on ext4 two at once cost more system time than they saved), and a directory is made
 * before anything in it without the walk waiting for it.
 * - `dir`: make directory `name` (mode 0700) in the directory open as `parentFd`, or in the one
 *   this worker made as number `parentMade`, and hold it open as number `made` (answer: its
 *   inode and device, which the main thread checks when it opens the directory itself);
 * - `run`: decode a run of small blobs and write their files (as `decodeRuns`); `decoded`: the
 *   pool's own thread decoded it already, and `data` holds the plaintexts where the blobs say;
 * - `file`: write a small file whose plaintext is known (empty, or read on its own);
 * - `release`: the directory made as number `made` gets nothing more: closed.
 */
export type WriteOp =
  | { op: 'dir'; made: number; parentFd: number; parentMade?: number; name: Uint8Array }
  | { op: 'run'; blobs: RunBlob[]; data: Uint8Array; decoded?: boolean }
  | { op: 'file'; file: SmallFile; data: Uint8Array }
  | { op: 'release'; made: number };

/** The answer to a `write` item: a directory made, a decoded run, or why an item failed (`errno`: the system's code). */
export type WriteResult = { ino: number; dev: number } | DecodedRun | { error: { code: string; message: string; errno?: boolean } } | null;

/** A small file to read and encode here as one chunk, so the main thread neither reads nor hashes it. */
export interface SourceFile {
  dirFd: number;
  name: Uint8Array;
  size: number;
  dev: bigint;
  ino: bigint;
}

export type SourceFileResult =
  | { blob: EncodedBlob | null; sha256: Uint8Array } // blob null: the file is empty
  | { grew: true }
  | { warning: string };

/**
 * A batch of small files' results in a few buffers rather than objects per file (cloning those,
 * with two 32-byte arrays each, took about a tenth of the worker's time; a buffer per blob cost
 * an allocation and a free each): the stored blobs one after another in `data`; per file its
 * chunk id and sha256 in `sums` (64 bytes), its compression code and plaintext length, and in
 * `out` its stored length in `data`, null when empty, a warning, or true when it grew.
 */
export interface FileBatch {
  data: Uint8Array;
  sums: Uint8Array;
  comps: Uint8Array;
  lengths: Uint32Array;
  /** 1 for a file whose blob in `data` is its plaintext, not encoded (EncodedBlob's `seen`). */
  seen: Uint8Array;
  out: (number | null | string | true)[];
}

/** A directory of the source, open in the main thread (a worker keeps only descriptors it opened itself: Node closes those when it ends). */
export interface DirRequest {
  fd: number;
}

/** A directory's listing (listing.ts), or why it could not be listed. */
export type DirListing = { data: Uint8Array } | { error: string };

// No collection is forced here: every buffer this thread makes is reused, released or
// transferred, so none waits for the collector. A major collection per 32 MiB decoded cost a
// restore of the real tree 0.5 s of CPU (V8's helper threads marking for each); one per 32 MiB
// encoded, 15 ms of the worker each on a 10 MB heap, made its backup 5 % slower for 2–5 MB less
// at the peak.

/** This thread's buffer for a small file's bytes, after the chunk id's prefix, reused from file to file (see readSourceFile). */
let readBuffer = new Uint8Array(0);

/**
 * The whole file as opened through its directory, or why it is not read; `grew` when it is now
 * larger than the walk saw. `plain` is a view of this thread's read buffer: valid until the next
 * call; `prefixed` the same bytes with the chunk id's prefix before them (see PrefixedChunkId).
 */
function readSourceFile(f: SourceFile): { plain: Uint8Array; prefixed: Uint8Array } | { grew: true } | { warning: string } {
  let fd: number;
  try {
    fd = openSync(atPath(f.dirFd, f.name), FILE_FLAGS);
  } catch (err) {
    return { warning: openFailure(err) };
  }
  try {
    const changed = changedSinceWalk(fstatSync(fd, { bigint: true }), { kind: 'f', dev: f.dev, ino: f.ino });
    if (changed) return { warning: changed };
    // One byte more than the walk saw, so that growth shows. A first read that stops exactly at
    // the walk's size met the end of the file: no second call to be told so.
    const want = f.size + 1;
    if (readBuffer.length < HMAC_BLOCK + want) {
      readBuffer = new Uint8Array(Math.max(HMAC_BLOCK + want, 64 * 1024));
      readBuffer.set(ids.prefix);
    }
    let n = 0;
    while (n < want) {
      const got = readSync(fd, readBuffer, HMAC_BLOCK + n, want - n, n);
      if (got === 0) break;
      n += got;
      if (n === f.size) break;
    }
    return n > f.size ? { grew: true } : { plain: readBuffer.subarray(HMAC_BLOCK, HMAC_BLOCK + n), prefixed: readBuffer.subarray(0, HMAC_BLOCK + n) };
  } catch (err) {
    return { warning: `cannot be read: ${(err as Error).message}` };
  } finally {
    closeSync(fd);
  }
}

/**
 * The blobs of one run of a pack, decoded and checked (or, `decoded`, their plaintexts as given),
 * their plaintexts copied into one buffer; a blob that comes with a restore's small file is
 * written to that file here instead.
 */
function decodeRun(blobs: RunBlob[], data: Uint8Array, decoded = false): DecodedRun {
  const plains: (Uint8Array | null)[] = [];
  const errors: DecodedRun['errors'] = [];
  let total = 0;
  for (const b of blobs) {
    let plain: Uint8Array;
    if (b.error) {
      plains.push(null);
      errors.push(b.error);
      continue;
    }
    try {
      plain = decoded ? data.subarray(b.offset, b.offset + b.length) : decodeBlob(key, b.ref, data.subarray(b.offset, b.offset + b.length));
    } catch (err) {
      plains.push(null);
      errors.push(postedDecodeFailure(err));
      continue;
    }
    if (b.file) {
      try {
        writeSmallFile(b.file, plain, dirOf(b.file));
        errors.push(null);
      } catch (err) {
        errors.push(postedErrno(err));
      }
      if (plain.buffer !== data.buffer) releasePrivate(plain);
      plains.push(null);
      continue;
    }
    plains.push(plain);
    errors.push(null);
    total += plain.length;
  }
  const out = new Uint8Array(total);
  const ends: number[] = [];
  let at = 0;
  for (const plain of plains) {
    if (plain) {
      out.set(plain, at);
      at += plain.length;
      if (plain.buffer !== data.buffer) releasePrivate(plain);
    }
    ends.push(at);
  }
  releasePrivate(data);
  return { data: out, ends, errors };
}

/** Small files read and encoded, their results gathered as a FileBatch. */
function fileBatch(items: SourceFile[], encode: { comp: CompressionCode; level: number | undefined; encrypt: boolean; skipSeen?: boolean }, transfer: ArrayBuffer[]): FileBatch {
  const n = items.length;
  const sums = new Uint8Array(n * 64);
  const comps = new Uint8Array(n);
  const seenFiles = new Uint8Array(n);
  const lengths = new Uint32Array(n);
  const out: FileBatch['out'] = [];
  let room = 0;
  for (const file of items) room += file.size + SEAL_OVERHEAD;
  const data = new Uint8Array(room);
  let at = 0;
  for (let i = 0; i < n; i++) {
    const file = items[i]!;
    const read = readSourceFile(file);
    if ('grew' in read) out.push(true);
    else if ('warning' in read) out.push(read.warning);
    else {
      const plain = read.plain;
      sums.set(hash('sha256', plain, 'buffer'), i * 64 + 32);
      lengths[i] = plain.length;
      if (plain.length === 0) out.push(null);
      else {
        const id = ids.id(read.prefixed);
        const blob = encodeBlobInto(key, plain, id, encode.comp, encode.level, encode.encrypt, data, at, encode.skipSeen ? seen : undefined);
        sums.set(id, i * 64);
        comps[i] = blob.comp;
        if (blob.seen) seenFiles[i] = 1;
        at += blob.length;
        out.push(blob.length);
      }
    }
  }
  const stored = new Uint8Array(data.buffer.transfer(at));
  transfer.push(stored.buffer, sums.buffer, comps.buffer, lengths.buffer as ArrayBuffer, seenFiles.buffer);
  return { data: stored, sums, comps, lengths, seen: seenFiles, out };
}

/** Directories this worker made for a restore and holds open, by number (see WriteOp). */
const madeDirs = new Map<number, number>();

function madeDir(made: number): number {
  const fd = madeDirs.get(made);
  if (fd === undefined) throw Object.assign(new Error('its directory could not be made'), { code: 'ENOENT' });
  return fd;
}

function dirOf(file: SmallFile): number {
  return file.made === undefined ? file.dirFd : madeDir(file.made);
}

function errnoResult(err: unknown): { error: PostedErrno } {
  return { error: postedErrno(err) };
}

function writeOp(op: WriteOp, transfer: ArrayBuffer[]): WriteResult {
  switch (op.op) {
    case 'run': {
      const run = decodeRun(op.blobs, op.data, op.decoded);
      transfer.push(run.data.buffer as ArrayBuffer);
      return run;
    }
    case 'file':
      try {
        writeSmallFile(op.file, op.data, dirOf(op.file));
        return null;
      } catch (err) {
        return errnoResult(err);
      }
    case 'dir': {
      let fd = -1;
      try {
        const at = atPath(op.parentMade === undefined ? op.parentFd : madeDir(op.parentMade), op.name);
        mkdirSync(at, { mode: 0o700 });
        fd = openSync(at, DIR_FLAGS);
        const st = fstatSync(fd);
        madeDirs.set(op.made, fd);
        return { ino: st.ino, dev: st.dev };
      } catch (err) {
        if (fd >= 0) closeSync(fd);
        return errnoResult(err);
      }
    }
    case 'release': {
      const fd = madeDirs.get(op.made);
      madeDirs.delete(op.made);
      if (fd !== undefined) closeSync(fd);
      return null;
    }
  }
}

const key = blobKeys(workerData as { encryption: Uint8Array; chunkId: Uint8Array });
const seen = new SeenIds((workerData as { seen: SharedArrayBuffer }).seen);
const ids = new PrefixedChunkId((workerData as { chunkId: Uint8Array }).chunkId);

function handle(msg: WorkerRequest): { results: unknown[]; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  switch (msg.type) {
    case 'listDir':
      return {
        results: msg.items.map(({ fd }): DirListing => {
          const listed = listDirectory(fd);
          if ('error' in listed) return listed;
          transfer.push(listed.data.buffer as ArrayBuffer);
          return { data: listed.data };
        }),
        transfer,
      };
    case 'encodeFiles':
      return { results: fileBatch(msg.items, msg, transfer) as unknown as unknown[], transfer };
    case 'encode':
      return {
        results: msg.items.map((plain) => {
          const blob = encodeHandedOver(key, plain, msg.comp, msg.level, msg.encrypt, msg.skipSeen ? seen : undefined);
          transfer.push(blob.data.buffer as ArrayBuffer);
          return blob;
        }),
        transfer,
      };
    case 'write':
      return { results: msg.items.map((op) => writeOp(op, transfer)), transfer };
    case 'decodeRuns':
      return {
        results: msg.items.map(({ blobs, data }) => {
          const run = decodeRun(blobs, data);
          transfer.push(run.data.buffer as ArrayBuffer);
          return run;
        }),
        transfer,
      };
    case 'decode':
      return {
        results: msg.items.map(({ ref, data, write, decoded }) => {
          let plain: Uint8Array;
          try {
            plain = decoded ? data : decodeBlob(key, ref, data);
          } catch (err) {
            return { error: postedDecodeFailure(err) };
          }
          if (write) {
            try {
              for (let off = 0; off < plain.length; ) off += writeSync(write.fd, plain, off, plain.length - off, write.position + off);
              return { written: true };
            } catch (err) {
              return errnoResult(err);
            } finally {
              if (plain.buffer !== data.buffer) releasePrivate(plain);
              releasePrivate(data);
            }
          }
          plain = owned(plain);
          if (plain.buffer !== data.buffer) releasePrivate(data);
          transfer.push(plain.buffer as ArrayBuffer);
          return { data: plain };
        }),
        transfer,
      };
  }
}

parentPort!.on('message', (msg: WorkerRequest) => {
  try {
    const { results, transfer } = handle(msg);
    parentPort!.postMessage({ seq: msg.seq, results }, transfer);
  } catch (err) {
    parentPort!.postMessage({ seq: msg.seq, error: { code: 'INTERNAL_ERROR', message: (err as Error).message } });
  }
});

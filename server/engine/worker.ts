import { parentPort } from 'node:worker_threads';
import { decodeBlob, encodeBlob } from './blob.ts';
import type { BlobRef, EncodedBlob } from './blob.ts';
import { createHash, createSecretKey } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import type { BlobKeys } from './crypto.ts';
import { EngineError } from './errors.ts';
import { collector, releasePrivate } from './release.ts';
import type { CompressionCode } from './types.ts';

/** Worker side of pool.ts: keyed hashing, compression and encryption of chunks, and the reverse. */
export type WorkerRequest =
  | { type: 'key'; ref: number; encryption: Uint8Array; chunkId: Uint8Array }
  | { type: 'forget'; ref: number }
  | { type: 'encode'; seq: number; ref: number; comp: CompressionCode; level: number | undefined; encrypt: boolean; items: Uint8Array[] }
  | { type: 'decode'; seq: number; ref: number; items: { ref: BlobRef; data: Uint8Array }[] }
  | { type: 'encodeFiles'; seq: number; ref: number; comp: CompressionCode; level: number | undefined; encrypt: boolean; items: SmallFile[] };

/** A small file read and encoded here as one chunk, so the main thread neither reads nor hashes it. */
export interface SmallFile {
  path: string;
  size: number;
}

export type SmallFileResult = { blob: EncodedBlob; sha256: string } | { grew: true } | { error: string };

/** The whole file, or null when it is now larger than `size` (the caller then streams it). */
function readWhole(path: string, size: number): Uint8Array | null {
  const fd = openSync(path, 'r');
  try {
    const buf = new Uint8Array(size + 1);
    let n = 0;
    while (n < buf.length) {
      const got = readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
    }
    return n > size ? null : new Uint8Array(buf.buffer.transfer(n));
  } finally {
    closeSync(fd);
  }
}

const keys = new Map<number, BlobKeys>();

const processed = collector('major', 32 * 1024 * 1024, 1024);

/** A view that owns its whole ArrayBuffer can be transferred; anything else (pooled Buffers) is copied. */
function own(data: Uint8Array): Uint8Array {
  return data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer ? data : new Uint8Array(data);
}

function handle(msg: WorkerRequest): void {
  if (msg.type === 'key') {
    keys.set(msg.ref, { encryption: createSecretKey(msg.encryption), chunkId: createSecretKey(msg.chunkId) });
    return;
  }
  if (msg.type === 'forget') {
    keys.delete(msg.ref);
    return;
  }
  const key = keys.get(msg.ref);
  if (!key) {
    parentPort!.postMessage({ seq: msg.seq, error: { code: 'INTERNAL_ERROR', message: 'unknown key reference' } });
    return;
  }
  if (msg.type === 'encodeFiles') {
    const transfer: ArrayBuffer[] = [];
    const results = msg.items.map((file): SmallFileResult => {
      processed(file.size);
      let plain: Uint8Array | null;
      try {
        plain = readWhole(file.path, file.size);
      } catch (err) {
        return { error: (err as Error).message };
      }
      if (!plain) return { grew: true };
      const sha256 = createHash('sha256').update(plain).digest('hex');
      const blob = encodeBlob(key, plain, msg.comp, msg.level, msg.encrypt);
      const data = own(blob.data);
      if (data.buffer !== plain.buffer) releasePrivate(plain);
      transfer.push(data.buffer as ArrayBuffer);
      return { blob: { ...blob, data }, sha256 };
    });
    parentPort!.postMessage({ seq: msg.seq, results }, transfer);
    return;
  }
  if (msg.type === 'encode') {
    const transfer: ArrayBuffer[] = [];
    const results = msg.items.map((plain) => {
      processed(plain.length);
      const blob = encodeBlob(key, plain, msg.comp, msg.level, msg.encrypt);
      const data = own(blob.data);
      if (data.buffer !== plain.buffer) releasePrivate(plain); // inputs arrive transferred: private to this thread
      transfer.push(data.buffer as ArrayBuffer);
      return { ...blob, data };
    });
    parentPort!.postMessage({ seq: msg.seq, results }, transfer);
    return;
  }
  const transfer: ArrayBuffer[] = [];
  const results = msg.items.map(({ ref, data }) => {
    processed(ref.rawLength);
    try {
      const plain = own(decodeBlob(key, ref, data));
      if (plain.buffer !== data.buffer) releasePrivate(data);
      transfer.push(plain.buffer as ArrayBuffer);
      return { data: plain };
    } catch (err) {
      const e = err instanceof EngineError ? err : new EngineError('CORRUPT_DATA', String(err));
      return { error: { code: e.code, message: e.message } };
    }
  });
  parentPort!.postMessage({ seq: msg.seq, results }, transfer);
}

parentPort!.on('message', (msg: WorkerRequest) => {
  try {
    handle(msg);
  } catch (err) {
    if ('seq' in msg) parentPort!.postMessage({ seq: msg.seq, error: { code: 'INTERNAL_ERROR', message: (err as Error).message } });
  }
});

import { ZstdCompress, ZstdDecompress, constants, gunzipSync, gzipSync, zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import { releasePrivate } from './release.ts';
import type { Compression, CompressionCode } from './types.ts';

export const DEFAULT_ZSTD_LEVEL = 2;

export function compressionCode(c: Compression): CompressionCode {
  return c === 'zstd' ? 1 : c === 'gzip' ? 2 : 0;
}

/** Returns the compressed bytes and their code, or the input with code 0 when compression does not shrink it. */
export function compress(data: Uint8Array, code: CompressionCode, level?: number): { data: Uint8Array; code: CompressionCode } {
  if (code === 0 || data.length < 64) return { data, code: 0 };
  // One output buffer a little larger than the input (zlib's default is many 16-64 KiB pieces
  // joined, several times the size of a small input), trimmed to its length afterwards.
  // At least 4 KiB: then it is a private allocation, never a slice of Buffer's shared pool.
  const chunkSize = Math.max(data.length + 1024, 4096);
  const out =
    code === 1
      ? (zstdReused(data, level ?? DEFAULT_ZSTD_LEVEL) ?? zstdCompressSync(data, { chunkSize, params: { [constants.ZSTD_c_compressionLevel]: level ?? DEFAULT_ZSTD_LEVEL } }))
      : gzipSync(data, { chunkSize, level: level ?? 6 });
  if (out.length < data.length) return { data: trim(out), code };
  releasePrivate(out);
  return { data, code: 0 };
}

/** What zlib's own synchronous path drives: the stream's native handle and the two counters it writes back. */
interface ZstdContext<S extends ZstdCompress | ZstdDecompress = ZstdCompress> {
  stream: S;
  handle: { writeSync(flush: number, input: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void; reset(): void };
  /** [bytes of output left free, bytes of input left unread] after a write. */
  state: Uint32Array;
}

/**
 * The native context inside a zstd stream, driven directly (as zlib's sync path does) so it can
 * be kept and reused. `onError` runs when zstd fails (zlib then closes the context). Null, the
 * stream closed, when this Node's zlib does not have the parts.
 */
function nativeContext<S extends ZstdCompress | ZstdDecompress>(stream: S, onError: () => void): ZstdContext<S> | null {
  stream.on('error', onError);
  const inner = stream as unknown as { _handle?: Partial<ZstdContext['handle']>; _writeState?: unknown };
  if (typeof inner._handle?.writeSync === 'function' && typeof inner._handle.reset === 'function' && inner._writeState instanceof Uint32Array) {
    return { stream, handle: inner._handle as ZstdContext['handle'], state: inner._writeState };
  }
  stream.close();
  return null;
}

const contexts = new Map<number, ZstdContext | null>();

function zstdContext(level: number): ZstdContext | null {
  let context = contexts.get(level);
  if (context === undefined) {
    context = nativeContext(new ZstdCompress({ params: { [constants.ZSTD_c_compressionLevel]: level } }), () => contexts.delete(level));
    contexts.set(level, context);
  }
  return context;
}

/** zstd's worst-case output size for `n` bytes (ZSTD_COMPRESSBOUND), so one write ends the frame. */
function zstdBound(n: number): number {
  return n + (n >> 8) + (n < 128 * 1024 ? (128 * 1024 - n) >> 11 : 0);
}

/**
 * One zstd frame from a native compression context kept per thread and level and reused from
 * blob to blob (a frame ended, zstd starts the next one afresh). zstdCompressSync makes a new
 * context and stream object each call, which costs more than compressing a small file does.
 * Null when the context cannot be had (the caller then uses zstdCompressSync). `into`: the
 * buffer to write into when it has room (else a private one is allocated, as without it).
 */
function zstdReused(data: Uint8Array, level: number, into?: Buffer): Uint8Array | null {
  const context = zstdContext(level);
  if (!context) return null;
  // Private and at least 4 KiB, as trim() and the callers' release expect.
  const size = Math.max(zstdBound(data.length) + 64, 4096);
  let out = into && into.length >= size ? into : Buffer.allocUnsafeSlow(size);
  let used = 0;
  let inOff = 0;
  let inLen = data.length;
  for (;;) {
    context.handle.writeSync(constants.ZSTD_e_end, data, inOff, inLen, out, used, out.length - used);
    if (context.stream.destroyed) {
      contexts.delete(level);
      return null;
    }
    const [outFree, inLeft] = context.state as unknown as [number, number];
    used = out.length - outFree;
    inOff += inLen - inLeft;
    inLen = inLeft;
    // As zlib's sync path: done once a write left output room (the frame is ended then).
    if (outFree > 0) return out.subarray(0, used);
    const bigger = Buffer.allocUnsafeSlow(out.length * 2);
    out.copy(bigger);
    out = bigger;
  }
}

/** This thread's buffer for compressTransient's output. */
let transient = Buffer.alloc(0);
/** ...kept up to a little over an average chunk (1 MiB): larger blobs are compressed as by compress. */
const TRANSIENT_MAX = 1536 * 1024;

/** Frees what compressTransient gave: its buffer is this thread's to keep, any other output is private. */
export function releaseTransient(view: Uint8Array): void {
  if (view.buffer !== transient.buffer) releasePrivate(view);
}

/**
 * As compress, for a caller that copies the output away before the next call: zstd writes into a
 * buffer this thread keeps (a small file's blob, sealed at once into its batch's buffer), where
 * compress allocates one per blob and trims it.
 */
export function compressTransient(data: Uint8Array, code: CompressionCode, level?: number): { data: Uint8Array; code: CompressionCode } {
  const size = zstdBound(data.length) + 64;
  if (code !== 1 || data.length < 64 || size > TRANSIENT_MAX) return compress(data, code, level);
  if (transient.length < size) transient = Buffer.allocUnsafeSlow(Math.max(size, 64 * 1024));
  const out = zstdReused(data, level ?? DEFAULT_ZSTD_LEVEL, transient);
  if (!out) return compress(data, code, level);
  return out.length < data.length ? { data: out, code } : { data, code: 0 };
}

export function decompress(data: Uint8Array, code: CompressionCode, rawLength: number): Uint8Array {
  if (code === 0) return data;
  const maxOutputLength = Math.max(rawLength, 1);
  const chunkSize = Math.max(rawLength, 4096);
  if (code === 1) return zstdDecompressReused(data, rawLength) ?? trim(zstdDecompressSync(data, { maxOutputLength, chunkSize }));
  return trim(gunzipSync(data, { maxOutputLength, chunkSize }));
}

let decompressor: ZstdContext<ZstdDecompress> | null | undefined;
/** The last frame decoded whole: the context is between frames and needs no reset. */
let betweenFrames = false;

/**
 * One zstd frame decoded with a native context kept per thread, for the same reason as
 * zstdReused: a new context and stream object per blob cost more than decoding a small one. A
 * context that ended a frame starts the next one afresh; it is reset only after a frame that did
 * not decode whole (zlib's reset makes a new native context: 20-28 µs, against 4 µs to decode a
 * 5 KiB blob). The output is a buffer of its own (transferable). A frame that fails, is cut
 * short, or does not give exactly `rawLength` bytes throws; the context is dropped when zstd
 * failed (zlib then closes it). Null when the context cannot be had.
 */
function zstdDecompressReused(data: Uint8Array, rawLength: number): Uint8Array | null {
  if (decompressor === undefined || decompressor?.stream.destroyed) {
    decompressor = nativeContext(new ZstdDecompress(), () => {}); // a failure shows as `destroyed` below
    betweenFrames = true;
  }
  if (!decompressor) return null;
  const { stream, handle, state } = decompressor;
  if (!betweenFrames) handle.reset();
  betweenFrames = false;
  // One byte of room beyond the expected length: output that fills it is longer than the blob says.
  const out = new Uint8Array(rawLength + 1);
  handle.writeSync(constants.ZSTD_e_end, data, 0, data.length, out, 0, out.length);
  const [outFree, inLeft] = state as unknown as [number, number];
  if (stream.destroyed || inLeft !== 0 || out.length - outFree !== rawLength) throw new Error('zstd frame does not decode to the blob');
  betweenFrames = true;
  return new Uint8Array(out.buffer.transfer(rawLength));
}

/** A zlib output (a view at the start of its private chunk-size buffer) becomes a buffer of its own, transferable. */
function trim(view: Uint8Array): Uint8Array {
  const buffer = view.buffer;
  if (view.byteOffset !== 0 || !(buffer instanceof ArrayBuffer) || buffer.byteLength === view.byteLength || buffer.byteLength === Buffer.poolSize) return view;
  return new Uint8Array(buffer.transfer(view.byteLength));
}

import { constants, gunzipSync, gzipSync, zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import { releasePrivate } from './release.ts';
import type { Compression, CompressionCode } from './types.ts';

export const DEFAULT_ZSTD_LEVEL = 3;

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
      ? zstdCompressSync(data, { chunkSize, params: { [constants.ZSTD_c_compressionLevel]: level ?? DEFAULT_ZSTD_LEVEL } })
      : gzipSync(data, { chunkSize, level: level ?? 6 });
  if (out.length < data.length) return { data: trim(out), code };
  releasePrivate(out);
  return { data, code: 0 };
}

export function decompress(data: Uint8Array, code: CompressionCode, rawLength: number): Uint8Array {
  if (code === 0) return data;
  const maxOutputLength = Math.max(rawLength, 1);
  const chunkSize = Math.max(rawLength, 4096);
  return trim(code === 1 ? zstdDecompressSync(data, { maxOutputLength, chunkSize }) : gunzipSync(data, { maxOutputLength, chunkSize }));
}

/** A zlib output (a view at the start of its private chunk-size buffer) becomes a buffer of its own, transferable. */
function trim(view: Uint8Array): Uint8Array {
  const buffer = view.buffer;
  if (view.byteOffset !== 0 || !(buffer instanceof ArrayBuffer) || buffer.byteLength === view.byteLength || buffer.byteLength === Buffer.poolSize) return view;
  return new Uint8Array(buffer.transfer(view.byteLength));
}

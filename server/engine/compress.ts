import { constants, gunzipSync, gzipSync, zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import type { Compression, CompressionCode } from './types.ts';

export const DEFAULT_ZSTD_LEVEL = 3;

export function compressionCode(c: Compression): CompressionCode {
  return c === 'zstd' ? 1 : c === 'gzip' ? 2 : 0;
}

/** Returns the compressed bytes and their code, or the input with code 0 when compression does not shrink it. */
export function compress(data: Uint8Array, code: CompressionCode, level?: number): { data: Uint8Array; code: CompressionCode } {
  if (code === 0 || data.length < 64) return { data, code: 0 };
  const out =
    code === 1
      ? zstdCompressSync(data, { params: { [constants.ZSTD_c_compressionLevel]: level ?? DEFAULT_ZSTD_LEVEL } })
      : gzipSync(data, { level: level ?? 6 });
  return out.length < data.length ? { data: out, code } : { data, code: 0 };
}

export function decompress(data: Uint8Array, code: CompressionCode, rawLength: number): Uint8Array {
  if (code === 0) return data;
  const maxOutputLength = Math.max(rawLength, 1);
  return code === 1 ? zstdDecompressSync(data, { maxOutputLength }) : gunzipSync(data, { maxOutputLength });
}

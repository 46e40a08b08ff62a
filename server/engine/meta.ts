import { zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import { open, seal } from './crypto.ts';
import type { MasterKey } from './crypto.ts';
import { EngineError } from './errors.ts';

/**
 * Metadata objects (config, snapshot headers, index files, pack headers) are zstd-compressed and
 * sealed with the master key, whatever a backup's options: file names and the shape of the tree
 * never lie in the clear. The kind is the GCM associated data, so an index cannot be passed off
 * as a snapshot. Layout: format byte | sealed, where the format byte says what the plaintext is:
 * 1 JSON, 2 the binary encoding of codec.ts.
 */
export type MetaKind = 'config' | 'index' | 'snapshot' | 'tree' | 'pack-header' | 'lock' | 'prune-marker' | 'maintenance';

const JSON_FORMAT = 1;
const BINARY_FORMAT = 2;

function encode(key: MasterKey, kind: MetaKind, format: number, plain: Uint8Array): Buffer {
  const sealed = seal(key.encryption, zstdCompressSync(plain), Buffer.from(kind));
  return Buffer.concat([Uint8Array.of(format), sealed]);
}

function decode(key: MasterKey, kind: MetaKind, data: Uint8Array, what: string): { format: number; plain: Buffer } {
  const format = data[0];
  if (format !== JSON_FORMAT && format !== BINARY_FORMAT) throw new EngineError('CORRUPT_DATA', `${what}: unknown format`, { object: what });
  try {
    return { format, plain: zstdDecompressSync(open(key.encryption, data.subarray(1), Buffer.from(kind))) };
  } catch (err) {
    throw new EngineError('CORRUPT_DATA', `${what} is damaged`, { object: what }, { cause: err });
  }
}

export function encodeMeta(key: MasterKey, kind: MetaKind, value: unknown): Buffer {
  return encode(key, kind, JSON_FORMAT, Buffer.from(JSON.stringify(value)));
}

export function encodeBinaryMeta(key: MasterKey, kind: MetaKind, plain: Uint8Array): Buffer {
  return encode(key, kind, BINARY_FORMAT, plain);
}

/** A JSON metadata object. */
export function decodeMeta<T>(key: MasterKey, kind: MetaKind, data: Uint8Array, what: string): T {
  const { format, plain } = decode(key, kind, data, what);
  if (format !== JSON_FORMAT) throw new EngineError('CORRUPT_DATA', `${what}: unexpected format`, { object: what });
  return JSON.parse(plain.toString('utf8')) as T;
}

/** A metadata object that may be JSON (written by format 1) or binary. */
export function decodeAnyMeta(key: MasterKey, kind: MetaKind, data: Uint8Array, what: string): { json: unknown } | { binary: Buffer } {
  const { format, plain } = decode(key, kind, data, what);
  return format === JSON_FORMAT ? { json: JSON.parse(plain.toString('utf8')) as unknown } : { binary: plain };
}

import { zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import { open, seal } from './crypto.ts';
import type { MasterKey } from './crypto.ts';
import { EngineError } from './errors.ts';

/**
 * Metadata objects (config, index files, snapshot manifests, pack headers) are always
 * JSON, zstd-compressed and sealed with the master key, whatever a backup's options: file
 * names and the shape of the tree never lie in the clear. The kind is the GCM associated
 * data, so an index cannot be passed off as a snapshot. Layout: version byte 1 | sealed.
 */
export type MetaKind = 'config' | 'index' | 'snapshot' | 'tree' | 'pack-header';

export function encodeMeta(key: MasterKey, kind: MetaKind, value: unknown): Buffer {
  const sealed = seal(key.encryption, zstdCompressSync(Buffer.from(JSON.stringify(value))), Buffer.from(kind));
  return Buffer.concat([Uint8Array.of(1), sealed]);
}

export function decodeMeta<T>(key: MasterKey, kind: MetaKind, data: Uint8Array, what: string): T {
  if (data[0] !== 1) throw new EngineError('CORRUPT_DATA', `${what}: unknown format`, { object: what });
  try {
    const plain = open(key.encryption, data.subarray(1), Buffer.from(kind));
    return JSON.parse(zstdDecompressSync(plain).toString('utf8')) as T;
  } catch (err) {
    throw new EngineError('CORRUPT_DATA', `${what} is damaged`, { object: what }, { cause: err });
  }
}

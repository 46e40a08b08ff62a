import { bytesEqual, toHex } from './codec.ts';
import { createSecretKey } from 'node:crypto';
import { chunkId, open, seal, sealInto } from './crypto.ts';
import type { BlobKeys } from './crypto.ts';
import { compress, compressTransient, decompress, releaseTransient } from './compress.ts';
import { EngineError } from './errors.ts';
import { owned, releasePrivate } from './release.ts';
import type { SeenIds } from './seen-ids.ts';
import type { CompressionCode } from './types.ts';

/**
 * A blob is one chunk (or one tree) as stored in a pack: compressed (or raw), then sealed with
 * AES-256-GCM when encrypted. Its id is HMAC-SHA-256(chunk-id key, plaintext); the id is the GCM
 * associated data, so a sealed blob cannot be passed off as another.
 */
export interface EncodedBlob {
  id: Uint8Array;
  data: Uint8Array;
  comp: CompressionCode;
  rawLength: number;
  /**
   * Set when `data` is a view of a buffer shared with other blobs (a batch of small files): called
   * once `data` has been copied or dropped, instead of freeing it.
   */
  release?: () => void;
  /** Not encoded: `data` is the plaintext, and a chunk with this id was encoded before in this backup (see SeenIds). */
  seen?: true;
}

/** Frees a blob's buffer now (a view of a batch is released instead; every other blob owns its buffer). */
export function dropBlob(blob: EncodedBlob): void {
  if (blob.release) blob.release();
  else releasePrivate(blob.data);
}

export interface BlobRef {
  id: Uint8Array;
  encrypted: boolean;
  comp: CompressionCode;
  rawLength: number;
}

export function encodeBlob(key: BlobKeys, plain: Uint8Array, comp: CompressionCode, level: number | undefined, encrypt: boolean, seen?: SeenIds): EncodedBlob {
  const id = chunkId(key.chunkId, plain);
  if (seen?.mark(id)) return { id, data: plain, comp: 0, rawLength: plain.length, seen: true };
  // Sealed, the compressor's output is copied at once: it may stay in the thread's reused buffer
  // (a fresh one per blob cost its allocation, its pages' first touch and a trimming copy).
  const packed = encrypt ? compressTransient(plain, comp, level) : compress(plain, comp, level);
  const data = encrypt ? seal(key.encryption, packed.data, id) : packed.data;
  if (encrypt && packed.data !== plain) releaseTransient(packed.data); // the compressor's output, now sealed
  return { id, data, comp: packed.code, rawLength: plain.length };
}

/** The keys encodeBlob and decodeBlob take, from the repository's master key (its bytes). */
export function blobKeys(key: { encryption: Uint8Array; chunkId: Uint8Array }): BlobKeys {
  return { encryption: createSecretKey(key.encryption), chunkId: createSecretKey(key.chunkId) };
}

/**
 * encodeBlob for a plaintext handed over whole (a chunk given to the worker pool, encoded by a
 * worker or by the pool's own thread): its buffer is freed once encoded, and the stored form owns
 * its whole buffer (transferable).
 */
export function encodeHandedOver(key: BlobKeys, plain: Uint8Array, comp: CompressionCode, level: number | undefined, encrypt: boolean, seen?: SeenIds): EncodedBlob {
  const blob = encodeBlob(key, plain, comp, level, encrypt, seen);
  const data = owned(blob.data);
  if (data.buffer !== plain.buffer) releasePrivate(plain);
  return { ...blob, data };
}

/**
 * As encodeBlob for a plaintext whose id the caller has (see PrefixedChunkId), the stored form
 * written at `at` of `out`, which has room for plain.length + SEAL_OVERHEAD bytes (a blob is
 * never larger: compression is kept only when it shrinks). Returns its compression and stored
 * length; `seen` (as encodeBlob's): the plaintext itself was written.
 */
export function encodeBlobInto(
  key: BlobKeys,
  plain: Uint8Array,
  id: Uint8Array,
  comp: CompressionCode,
  level: number | undefined,
  encrypt: boolean,
  out: Uint8Array,
  at: number,
  seen?: SeenIds,
): { comp: CompressionCode; length: number; seen?: true } {
  if (seen?.mark(id)) {
    out.set(plain, at);
    return { comp: 0, length: plain.length, seen: true };
  }
  const packed = compressTransient(plain, comp, level);
  let length = packed.data.length;
  if (encrypt) length = sealInto(key.encryption, packed.data, id, out, at);
  else out.set(packed.data, at);
  if (packed.data !== plain) releaseTransient(packed.data); // the compressor's output, now copied into `out`
  return { comp: packed.code, length };
}

/** Decrypts, decompresses and checks the keyed hash; throws CORRUPT_DATA on any mismatch. */
export function decodeBlob(key: BlobKeys, ref: BlobRef, stored: Uint8Array): Uint8Array {
  let packed: Uint8Array;
  try {
    packed = ref.encrypted ? open(key.encryption, stored, ref.id) : stored;
  } catch {
    const hex = toHex(ref.id);
    throw new EngineError('CORRUPT_DATA', `blob ${hex} does not authenticate`, { chunk: hex });
  }
  let plain: Uint8Array;
  try {
    plain = decompress(packed, ref.comp, ref.rawLength);
    if (plain !== packed && packed !== stored) releasePrivate(packed); // the decipher's output, now decompressed
  } catch {
    const hex = toHex(ref.id);
    throw new EngineError('CORRUPT_DATA', `blob ${hex} does not decompress`, { chunk: hex });
  }
  if (plain.length !== ref.rawLength || !bytesEqual(chunkId(key.chunkId, plain), ref.id)) {
    const hex = toHex(ref.id);
    throw new EngineError('CORRUPT_DATA', `blob ${hex} does not match its hash`, { chunk: hex });
  }
  return plain;
}

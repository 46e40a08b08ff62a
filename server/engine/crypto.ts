import { createCipheriv, createDecipheriv, createHmac, hash, hkdfSync, randomBytes, scrypt } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { randomPool } from '../random-pool.ts';
import { EngineError } from './errors.ts';
import { releasePrivate } from './release.ts';

/** The two secrets of a repository: data/metadata encryption and chunk identity. */
export interface MasterKey {
  encryption: Buffer; // 32 bytes, AES-256-GCM
  chunkId: Buffer; // 32 bytes, HMAC-SHA-256 key for chunk ids
}

/** A key as bytes, or imported once as a KeyObject (much cheaper per use on the hot path). */
export type Key = Uint8Array | KeyObject;

/** The keys chunk encoding needs. */
export interface BlobKeys {
  encryption: Key;
  chunkId: Key;
}

export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
export const SEAL_OVERHEAD = NONCE_BYTES + TAG_BYTES;

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

export const DEFAULT_SCRYPT: ScryptParams = { N: 1 << 15, r: 8, p: 1 };

export function deriveFromPassword(password: string, salt: Uint8Array, params: ScryptParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, 32, { ...params, maxmem: 256 * params.N * params.r }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/** A key file is already high-entropy material: HKDF is enough, no stretching. */
export function deriveFromKeyFile(material: Uint8Array, salt: Uint8Array): Buffer {
  return Buffer.from(hkdfSync('sha256', material, salt, 'backup-engine key file v1', 32));
}

/** Nonces drawn 256 at a time: one CSPRNG call per blob costs more than a small blob's encryption. */
const randomNonce = randomPool(NONCE_BYTES, 256);

/** AES-256-GCM: nonce(12) | ciphertext | tag(16). `aad` binds the ciphertext to its role or id. */
export function seal(key: Key, plaintext: Uint8Array, aad?: Uint8Array): Buffer {
  const out = Buffer.allocUnsafeSlow(plaintext.length + SEAL_OVERHEAD); // never a pooled slab: transferable
  sealInto(key, plaintext, aad, out, 0);
  return out;
}

/** As seal, written at `at` of `out`, which has room for plaintext.length + SEAL_OVERHEAD bytes; returns the bytes written. */
export function sealInto(key: Key, plaintext: Uint8Array, aad: Uint8Array | undefined, out: Uint8Array, at: number): number {
  const nonce = randomNonce();
  out.set(nonce, at);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  if (aad) cipher.setAAD(aad);
  let off = at + NONCE_BYTES;
  const body = cipher.update(plaintext);
  out.set(body, off);
  off += body.length;
  releasePrivate(body); // allocated by the cipher for this call
  const fin = cipher.final();
  out.set(fin, off);
  off += fin.length;
  out.set(cipher.getAuthTag(), off);
  return off + TAG_BYTES - at;
}

/** Throws EngineError CORRUPT_DATA when the tag does not authenticate. */
export function open(key: Key, sealed: Uint8Array, aad?: Uint8Array): Buffer {
  if (sealed.length < SEAL_OVERHEAD) throw new EngineError('CORRUPT_DATA', 'sealed object is truncated');
  const nonce = sealed.subarray(0, NONCE_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, nonce);
  decipher.setAuthTag(tag);
  if (aad) decipher.setAAD(aad);
  try {
    const body = decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES));
    const fin = decipher.final();
    return fin.length ? Buffer.concat([body, fin]) : body;
  } catch {
    throw new EngineError('CORRUPT_DATA', 'authentication tag does not match');
  }
}

/** A blob's id: HMAC-SHA-256 of its plaintext under the chunk-id key (32 bytes). */
export function chunkId(key: Key, plaintext: Uint8Array): Uint8Array {
  return new Uint8Array(createHmac('sha256', key).update(plaintext).digest());
}

/** HMAC-SHA-256's block: the key, padded, as the first block of each of its two hashes. */
export const HMAC_BLOCK = 64;

/**
 * chunkId for a plaintext read in just after `prefix` (the key's inner block): the same id from
 * two one-shot hashes, with no Hmac object per blob (creating one cost a small file's encoding
 * more than hashing its bytes did).
 */
export class PrefixedChunkId {
  /** The chunk-id key XOR HMAC's inner pad: the 64 bytes before the plaintext. */
  readonly prefix = new Uint8Array(HMAC_BLOCK);
  /** The key XOR the outer pad, then the inner digest. */
  private readonly outer = new Uint8Array(HMAC_BLOCK + 32);

  constructor(key: Uint8Array) {
    if (key.length > HMAC_BLOCK) throw new Error('a chunk-id key is at most 64 bytes');
    this.prefix.fill(0x36);
    this.outer.fill(0x5c, 0, HMAC_BLOCK);
    for (let i = 0; i < key.length; i++) {
      this.prefix[i]! ^= key[i]!;
      this.outer[i]! ^= key[i]!;
    }
  }

  /** The id of the plaintext in `prefixed`, which starts with `prefix`. */
  id(prefixed: Uint8Array): Uint8Array {
    this.outer.set(hash('sha256', prefixed, 'buffer') as unknown as Uint8Array, HMAC_BLOCK);
    return new Uint8Array(hash('sha256', this.outer, 'buffer') as unknown as Uint8Array);
  }
}

export function randomId(): string {
  return randomBytes(32).toString('hex');
}

/** A fresh random repository key. */
export function newMasterKey(): MasterKey {
  return { encryption: randomBytes(32), chunkId: randomBytes(32) };
}

/** The key as 64 bytes (encryption key, then chunk-id key), for a caller that stores it wrapped. */
export function masterKeyToBytes(key: MasterKey): Buffer {
  return Buffer.concat([key.encryption, key.chunkId]);
}

export function masterKeyFromBytes(bytes: Uint8Array): MasterKey {
  if (bytes.length !== 64) throw new EngineError('WRONG_KEY', 'a repository key is 64 bytes');
  return { encryption: Buffer.from(bytes.subarray(0, 32)), chunkId: Buffer.from(bytes.subarray(32)) };
}

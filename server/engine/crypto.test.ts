import { createSecretKey, randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { HMAC_BLOCK, PrefixedChunkId, chunkId, newMasterKey } from './crypto.ts';

it('gives a plaintext read in after its prefix the id chunkId gives it, whatever its length', () => {
  const key = newMasterKey().chunkId;
  const ids = new PrefixedChunkId(key);
  for (const n of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 64 * 1024, 256 * 1024 + 3]) {
    const plain = randomBytes(n);
    const prefixed = new Uint8Array(HMAC_BLOCK + n);
    prefixed.set(ids.prefix);
    prefixed.set(plain, HMAC_BLOCK);
    const expected = Buffer.from(chunkId(createSecretKey(key), plain));
    expect(Buffer.from(ids.id(prefixed))).toEqual(expected);
    expect(Buffer.from(ids.id(prefixed))).toEqual(expected); // and again: nothing of the last id stays
  }
  expect(Buffer.from(new PrefixedChunkId(newMasterKey().chunkId).id(ids.prefix))).not.toEqual(Buffer.from(ids.id(ids.prefix)));
});

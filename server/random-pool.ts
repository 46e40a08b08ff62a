import { randomBytes } from 'node:crypto';

/**
 * Random bytes `size` at a time, drawn from the CSPRNG `count` pieces at a time: one call per
 * piece costs more than the small work each piece is for (a request id, a small blob's nonce).
 * Every batch is a fresh buffer, so a piece handed out is never overwritten.
 */
export function randomPool(size: number, count: number): () => Buffer {
  let batch = Buffer.alloc(0);
  let at = 0;
  return () => {
    if (at + size > batch.length) {
      batch = randomBytes(size * count);
      at = 0;
    }
    at += size;
    return batch.subarray(at - size, at);
  };
}

import { randomBytes } from 'node:crypto';
import { constants, zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { compress, decompress } from './compress.ts';
import { decodeBlob, encodeBlob } from './blob.ts';
import { newMasterKey } from './crypto.ts';
import { open, seal } from './crypto.ts';

function text(bytes: number, seed: number): Uint8Array {
  const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];
  let s = '';
  for (let i = 0; s.length < bytes; i++) s += `${words[(i * seed) % words.length]} ${i} `;
  return new Uint8Array(Buffer.from(s.slice(0, bytes)));
}

describe('compress', () => {
  it('gives standalone zstd frames as small as a fresh context gives, from a context reused blob after blob', () => {
    // Sizes around the 4 KiB floor of the output buffer, small files, and chunks up to the 4 MiB
    // maximum; text shrinks, random bytes do not (kept raw); levels interleaved.
    const sizes = [100, 4000, 4095, 4096, 4097, 70_000, 1 << 20, 4 << 20];
    const inputs = sizes.flatMap((n, i) => [text(n, i + 3), new Uint8Array(randomBytes(n))]);
    for (const level of [3, 1, 3]) {
      for (const input of inputs) {
        const { data, code } = compress(input.slice(), 1, level);
        const reference = zstdCompressSync(input, { params: { [constants.ZSTD_c_compressionLevel]: level } });
        if (reference.length < input.length) {
          // Decoded by a decoder of its own: nothing of an earlier frame is needed.
          expect(code).toBe(1);
          expect(Buffer.from(zstdDecompressSync(data)).equals(input)).toBe(true);
          expect(data.length).toBeLessThanOrEqual(reference.length * 1.01);
        } else {
          expect(code).toBe(0);
          expect(Buffer.from(data).equals(input)).toBe(true);
        }
        expect(Buffer.from(decompress(data, code, input.length)).equals(input)).toBe(true);
      }
    }
  });
});

describe('sealed blobs compressed through the reused output buffer', () => {
  it('each stay whole when the next one is compressed, below and above that buffer\'s size, text and random', () => {
    const key = newMasterKey();
    const sizes = [100, 5000, 70_000, 1 << 20, (3 << 20) + 7];
    const inputs = sizes.flatMap((n, i) => [text(n, i + 5), new Uint8Array(randomBytes(n))]);
    // Encoded one after another (each sealed from the buffer the next reuses), decoded only at the end.
    const blobs = inputs.map((input) => ({ input, blob: encodeBlob(key, input.slice(), 1, 3, true) }));
    for (const { input, blob } of blobs) {
      const ref = { id: blob.id, encrypted: true, comp: blob.comp, rawLength: input.length };
      expect(Buffer.from(decodeBlob(key, ref, blob.data)).equals(input)).toBe(true);
    }
    // Text shrinks (zstd), random bytes are kept raw.
    expect(blobs.filter((b, i) => i % 2 === 0).every((b) => b.blob.comp === 1)).toBe(true);
    expect(blobs.filter((b, i) => i % 2 === 1).every((b) => b.blob.comp === 0)).toBe(true);
  });
});

describe('decompress', () => {
  it('decodes frame after frame with one context, and a frame cut short, damaged, doubled or of another length throws without spoiling the next', () => {
    const a = text(5000, 3);
    const b = text(70_000, 5);
    const fa = compress(a.slice(), 1).data;
    const fb = compress(b.slice(), 1).data;
    const damaged = new Uint8Array(fa);
    damaged[10]! ^= 0xff;
    const bad: [Uint8Array, number][] = [
      [fa.subarray(0, fa.length - 5), a.length],
      [fa.subarray(0, fa.length >> 1), a.length],
      [damaged, a.length],
      [new Uint8Array(Buffer.concat([fa, fb])), a.length],
      [fa, a.length - 1],
      [fa, a.length + 1],
    ];
    for (const [frame, rawLength] of bad) {
      expect(() => decompress(frame, 1, rawLength)).toThrow();
      expect(Buffer.from(decompress(fb, 1, b.length)).equals(b)).toBe(true);
      expect(Buffer.from(decompress(fa, 1, a.length)).equals(a)).toBe(true);
    }
    // Its own buffer, whole: it can be transferred to another thread.
    const out = decompress(fa, 1, a.length);
    expect(out.byteOffset === 0 && out.buffer.byteLength === a.length).toBe(true);
  });
});

describe('seal', () => {
  it('gives every sealed object a nonce of its own, across refills of the nonce batch', () => {
    const key = randomBytes(32);
    const nonces = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const sealed = seal(key, Buffer.from(`blob ${i}`));
      nonces.add(sealed.subarray(0, 12).toString('hex'));
      expect(open(key, sealed).toString()).toBe(`blob ${i}`);
    }
    expect(nonces.size).toBe(1000);
  });
});

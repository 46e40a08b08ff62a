import { createHash } from 'node:crypto';
import { release } from './release.ts';

/** FastCDC (gear rolling hash, cut-point skipping, normalized chunking). */
export interface ChunkerParams {
  min: number;
  avg: number;
  max: number;
}

/** restic's bounds for the minimum; the hash is not even computed over the first `min` bytes of a chunk. */
export const DEFAULT_CHUNKER: ChunkerParams = { min: 512 * 1024, avg: 1024 * 1024, max: 4 * 1024 * 1024 };

/** 256 pseudo-random 32-bit values derived from the repository's chunker seed. */
export function gearTable(seed: Uint8Array): Int32Array {
  const table = new Int32Array(256);
  for (let block = 0; block < 32; block++) {
    const digest = createHash('sha256').update(seed).update(Uint8Array.of(block)).digest();
    for (let j = 0; j < 8; j++) table[block * 8 + j] = digest.readInt32LE(j * 4);
  }
  return table;
}

/** Mask with `bits` ones in the top of a 32-bit word: the gear hash's high bits see the longest window. */
function topMask(bits: number): number {
  return bits >= 32 ? -1 : ~((1 << (32 - bits)) - 1);
}

export class Chunker {
  readonly params: ChunkerParams;
  private readonly gear: Int32Array;
  private readonly maskSmall: number;
  private readonly maskLarge: number;

  constructor(gear: Int32Array, params: ChunkerParams = DEFAULT_CHUNKER) {
    this.gear = gear;
    this.params = params;
    const bits = Math.round(Math.log2(params.avg));
    this.maskSmall = topMask(bits + 2);
    this.maskLarge = topMask(bits - 2);
  }

  /**
   * Length of the next chunk starting at `start`. The caller passes at least `max` bytes
   * (`end - start >= max`) unless `end` is the end of the stream.
   */
  cut(data: Uint8Array, start: number, end: number): number {
    const { min, avg, max } = this.params;
    const n = end - start;
    if (n <= min) return n;
    const stop = n < max ? end : start + max;
    const normal = Math.min(start + avg, stop);
    const from = start + min;
    let at = this.firstCut(data, from, from, normal, this.maskSmall);
    if (at < 0) at = this.firstCut(data, from, normal, stop, this.maskLarge);
    return (at < 0 ? stop : at) - start;
  }

  /** The hash after the bytes before `at`, as if hashed from `from`: it depends on the last 32 bytes only (each is shifted out after 32 steps). */
  private hashBefore(data: Uint8Array, from: number, at: number): number {
    const gear = this.gear;
    let h = 0;
    for (let i = Math.max(from, at - 32); i < at; i++) h = ((h << 1) + gear[data[i]!]!) | 0;
    return h;
  }

  /**
   * The end of the first byte in [lo, hi) whose hash (over the bytes from `from`) has none of
   * `mask`'s bits set, or -1. The range is hashed as two halves in one loop: each byte's hash
   * depends on the one before, and two independent chains side by side run about 1.7 times as
   * fast as one. A cut found in the second half waits until the first half's rest has none.
   */
  private firstCut(data: Uint8Array, from: number, lo: number, hi: number, mask: number): number {
    const gear = this.gear;
    let a = this.hashBefore(data, from, lo);
    if (hi - lo < 64) {
      for (let i = lo; i < hi; i++) {
        a = ((a << 1) + gear[data[i]!]!) | 0;
        if ((a & mask) === 0) return i + 1;
      }
      return -1;
    }
    const mid = lo + ((hi - lo) >> 1);
    let b = this.hashBefore(data, from, mid);
    let i = lo;
    let j = mid;
    let second = -1;
    for (; i < mid; i++, j++) {
      a = ((a << 1) + gear[data[i]!]!) | 0;
      b = ((b << 1) + gear[data[j]!]!) | 0;
      if ((a & mask) === 0 || (b & mask) === 0) {
        if ((a & mask) === 0) return i + 1;
        second = j + 1;
        i++;
        break;
      }
    }
    if (second >= 0) {
      for (; i < mid; i++) {
        a = ((a << 1) + gear[data[i]!]!) | 0;
        if ((a & mask) === 0) return i + 1;
      }
      return second;
    }
    for (; j < hi; j++) {
      b = ((b << 1) + gear[data[j]!]!) | 0;
      if ((b & mask) === 0) return j + 1;
    }
    return -1;
  }
}

/** Reads `into[offset..offset+length)`, returning the bytes read (0 at end of stream). */
export type ReadFn = (into: Uint8Array, offset: number, length: number) => Promise<number>;

/**
 * Splits a stream into chunks, each a fresh Uint8Array owning its buffer (transferable to a worker).
 * Holds at most 2 x max bytes besides the chunks handed out.
 */
export async function* chunkStream(read: ReadFn, chunker: Chunker): AsyncGenerator<Uint8Array> {
  const max = chunker.params.max;
  const buf = new Uint8Array(max * 2);
  let start = 0;
  let end = 0;
  let eof = false;
  for (;;) {
    while (!eof && end - start < max) {
      if (end === buf.length) {
        buf.copyWithin(0, start, end);
        end -= start;
        start = 0;
      }
      const n = await read(buf, end, buf.length - end);
      if (n === 0) eof = true;
      end += n;
    }
    if (start === end) {
      release(buf);
      return;
    }
    const len = chunker.cut(buf, start, end);
    yield buf.slice(start, start + len);
    start += len;
  }
}

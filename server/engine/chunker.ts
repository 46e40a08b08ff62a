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
    const gear = this.gear;
    const maskS = this.maskSmall;
    const maskL = this.maskLarge;
    let h = 0;
    let i = start + min;
    // The hot loop, two bytes per step (fewer loop checks); each byte's hash is still tested.
    for (; i + 1 < normal; i += 2) {
      h = ((h << 1) + gear[data[i]!]!) | 0;
      if ((h & maskS) === 0) return i + 1 - start;
      h = ((h << 1) + gear[data[i + 1]!]!) | 0;
      if ((h & maskS) === 0) return i + 2 - start;
    }
    for (; i < normal; i++) {
      h = ((h << 1) + gear[data[i]!]!) | 0;
      if ((h & maskS) === 0) return i + 1 - start;
    }
    for (; i + 1 < stop; i += 2) {
      h = ((h << 1) + gear[data[i]!]!) | 0;
      if ((h & maskL) === 0) return i + 1 - start;
      h = ((h << 1) + gear[data[i + 1]!]!) | 0;
      if ((h & maskL) === 0) return i + 2 - start;
    }
    for (; i < stop; i++) {
      h = ((h << 1) + gear[data[i]!]!) | 0;
      if ((h & maskL) === 0) return i + 1 - start;
    }
    return stop - start;
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

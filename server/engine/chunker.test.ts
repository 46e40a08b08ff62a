import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Chunker, DEFAULT_CHUNKER, chunkStream, gearTable } from './chunker.ts';

const chunker = new Chunker(gearTable(Buffer.from('test seed')));

function cuts(c: Chunker, data: Uint8Array): number[] {
  const out: number[] = [];
  for (let at = 0; at < data.length; ) {
    const len = c.cut(data, at, data.length);
    out.push(len);
    at += len;
  }
  return out;
}

function streamOf(data: Uint8Array, step: number) {
  let pos = 0;
  return async (into: Uint8Array, offset: number, length: number) => {
    const n = Math.min(length, step, data.length - pos);
    into.set(data.subarray(pos, pos + n), offset);
    pos += n;
    return n;
  };
}

describe('FastCDC chunker', () => {
  const data = randomBytes(48 * 1024 * 1024);

  it('keeps chunks within bounds and near the 1 MiB average', () => {
    const sizes = cuts(chunker, data);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(data.length);
    for (const s of sizes.slice(0, -1)) {
      expect(s).toBeGreaterThanOrEqual(DEFAULT_CHUNKER.min);
      expect(s).toBeLessThanOrEqual(DEFAULT_CHUNKER.max);
    }
    const avg = data.length / sizes.length;
    expect(avg).toBeGreaterThan(0.7 * DEFAULT_CHUNKER.avg);
    expect(avg).toBeLessThan(1.5 * DEFAULT_CHUNKER.avg);
  });

  it('cuts at the max on data without boundaries (all zeros)', () => {
    expect(cuts(chunker, new Uint8Array(10 * 1024 * 1024))).toEqual([4, 4, 2].map((m) => m * 1024 * 1024));
  });

  it('streams the same cuts whatever the read sizes', async () => {
    const expected = cuts(chunker, data);
    for (const step of [65536, 1_000_003]) {
      const got: number[] = [];
      for await (const c of chunkStream(streamOf(data, step), chunker)) got.push(c.length);
      expect(got).toEqual(expected);
    }
  });

  it('re-synchronises after an insertion: later boundaries are unchanged', () => {
    const edited = Buffer.concat([data.subarray(0, 20e6), Buffer.from('inserted bytes'), data.subarray(20e6)]);
    const ends = (sizes: number[], shift: number) => {
      let at = 0;
      return new Set(sizes.map((s) => (at += s) - shift));
    };
    const before = ends(cuts(chunker, data), 0);
    const after = [...ends(cuts(chunker, edited), 14)].filter((e) => e > 26e6);
    expect(after.length).toBeGreaterThan(10);
    for (const e of after) expect(before.has(e)).toBe(true);
  });

  it('cuts where the plain one-byte-at-a-time definition cuts, whatever the bounds, start and end', () => {
    const gear = gearTable(Buffer.from('test seed'));
    const top = (bits: number) => ~((1 << (32 - bits)) - 1);
    // FastCDC as defined: the gear hash from `min` on, the stricter mask up to `avg`, the looser one up to `max`.
    const reference = (p: typeof DEFAULT_CHUNKER, d: Uint8Array, start: number, end: number): number => {
      const n = end - start;
      if (n <= p.min) return n;
      const stop = n < p.max ? end : start + p.max;
      const bits = Math.round(Math.log2(p.avg));
      let h = 0;
      for (let i = start + p.min; i < stop; i++) {
        h = ((h << 1) + gear[d[i]!]!) | 0;
        if ((h & (i < start + p.avg ? top(bits + 2) : top(bits - 2))) === 0) return i + 1 - start;
      }
      return stop - start;
    };
    // Random bytes, and bytes with many boundaries close together (a short repeating pattern).
    const patterned = new Uint8Array(4 * 1024 * 1024).map((_, i) => (i * 7) % 251 ^ (i >> 12));
    const cases: [typeof DEFAULT_CHUNKER, Uint8Array][] = [
      [DEFAULT_CHUNKER, data.subarray(0, 24 * 1024 * 1024)],
      [DEFAULT_CHUNKER, patterned],
      [{ min: 64, avg: 256, max: 1024 }, data.subarray(0, 1024 * 1024)],
      [{ min: 16, avg: 64, max: 200 }, data.subarray(0, 256 * 1024)],
      [{ min: 4096, avg: 8192, max: 65536 }, patterned],
    ];
    let compared = 0;
    for (const [params, d] of cases) {
      const c = new Chunker(gear, params);
      for (let at = 0; at < d.length; ) {
        const len = c.cut(d, at, d.length);
        expect(len).toBe(reference(params, d, at, d.length));
        at += len;
        compared++;
      }
      for (let k = 0; k < 200; k++) {
        const start = (k * 7919 * 13) % (d.length - 1);
        const end = Math.min(d.length, start + 1 + ((k * 104729) % (2 * params.max)));
        expect(c.cut(d, start, end)).toBe(reference(params, d, start, end));
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });

  it('depends on the repository seed', () => {
    const other = new Chunker(gearTable(Buffer.from('another seed')));
    expect(cuts(other, data)).not.toEqual(cuts(chunker, data));
  });
});

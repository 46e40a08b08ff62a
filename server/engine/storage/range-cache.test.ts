import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { RangeCache, rangeCacheFor, type FetchSink } from './range-cache.ts';

const MiB = 2 ** 20;

/** An object store of one object whose reads are recorded and can be held back after their first bytes. */
function store(bytes: Uint8Array) {
  const fetches: { offset: number; length: number }[] = [];
  let hold: Promise<void> | null = null;
  const fetch = async (_name: string, offset: number, length: number, sink: FetchSink) => {
    fetches.push({ offset, length });
    const part = bytes.subarray(offset, Math.min(offset + length, bytes.length));
    if (part.length === 0) throw new RangeError('past the end');
    sink.size(part.length);
    const half = Math.floor(part.length / 2);
    sink.data(part.subarray(0, half));
    if (hold) await hold;
    sink.data(part.subarray(half));
  };
  return { fetch, fetches, holdAfterFirstHalf: (p: Promise<void> | null) => (hold = p) };
}

it('answers a read from the first bytes of a window while the rest is still on the way', async () => {
  const bytes = randomBytes(16 * MiB);
  const s = store(bytes);
  let release!: () => void;
  s.holdAfterFirstHalf(new Promise((r) => (release = r)));
  const cache = new RangeCache(s.fetch, { windowBytes: 24 * MiB, maxBytes: 72 * MiB, maxRange: 24 * MiB });
  const early = await cache.read('p', 1000, 4 * MiB)!;
  expect(Buffer.from(early).equals(bytes.subarray(1000, 1000 + 4 * MiB))).toBe(true);
  const late = cache.read('p', 12 * MiB, 2 * MiB)!;
  let done = false;
  void late.then(() => (done = true));
  await new Promise((r) => setTimeout(r, 20));
  expect(done).toBe(false); // its bytes have not come yet
  release();
  expect(Buffer.from(await late).equals(bytes.subarray(12 * MiB, 14 * MiB))).toBe(true);
  expect(s.fetches).toEqual([{ offset: 0, length: 24 * MiB }]); // small and large ranges, one fetch
  await expect(cache.read('p', 16 * MiB - 10, 20)!).rejects.toBeInstanceOf(RangeError);
});

it('drops the windows read most, never one still being fetched, and reads a dropped window again smaller, then not at all', async () => {
  const objects = new Map(['a', 'b', 'c', 'd', 'e'].map((n) => [n, randomBytes(8 * MiB)]));
  const fetches: string[] = [];
  let hold: Promise<void> | null = null;
  const cache = new RangeCache(
    async (name, offset, length, sink) => {
      fetches.push(`${name}@${offset / MiB}+${length / MiB}`);
      const part = objects.get(name)!.subarray(offset, offset + length);
      sink.size(part.length);
      if (hold) await hold;
      sink.data(part);
    },
    { windowBytes: 8 * MiB, maxBytes: 16 * MiB, maxRange: 8 * MiB },
  );
  const check = async (name: string, offset: number, length: number) => {
    const got = cache.read(name, offset, length);
    expect(got).not.toBeNull();
    expect(Buffer.from(await got!).equals(objects.get(name)!.subarray(offset, offset + length))).toBe(true);
  };
  await check('a', 0, 100);
  await check('b', 0, 4 * MiB);
  let release!: () => void;
  hold = new Promise((r) => (release = r));
  // c drops b (read most), d drops a; e finds only windows being fetched and drops none of them.
  const reads = [check('c', MiB, 100), check('d', MiB, 100), check('e', MiB, 100)];
  await new Promise((r) => setTimeout(r, 10));
  release();
  await Promise.all(reads);
  hold = null;
  expect(fetches).toEqual(['a@0+8', 'b@0+8', 'c@0+8', 'd@0+8', 'e@0+8']);
  await check('d', 2 * MiB, 100); // still kept
  await check('b', 3 * MiB + 10, 100); // dropped: read again as a 1 MiB window
  await check('b', 3 * MiB + 500, 100);
  expect(fetches.slice(5)).toEqual(['b@3+1']);

  // With room for one window: once its small window is dropped too, a range is read on its own.
  const one = new RangeCache(async (name, offset, length, sink) => {
    const part = objects.get(name)!.subarray(offset, offset + length);
    sink.size(part.length);
    sink.data(part);
  }, { windowBytes: 8 * MiB, maxBytes: 8 * MiB, maxRange: 8 * MiB });
  for (const name of ['a', 'b', 'a', 'b', 'c']) await one.read(name, 0, 100);
  expect(one.read('a', 0, 100)).toBeNull();
  expect(one.read('b', 0, 100)).toBeNull();
  expect(one.read('c', 0, 100)).not.toBeNull();
});

it('fetches the windows of announced reads ahead, in their order, never at the cost of a window still to be read', async () => {
  const objects = new Map(['a', 'b', 'c', 'd', 'e'].map((n) => [n, randomBytes(8 * MiB)]));
  const fetches: string[] = [];
  const cache = new RangeCache(
    async (name, offset, length, sink) => {
      fetches.push(name);
      const part = objects.get(name)!.subarray(offset, offset + length);
      sink.size(part.length);
      sink.data(part);
    },
    { windowBytes: 8 * MiB, maxBytes: 24 * MiB, maxRange: 8 * MiB, ahead: 2 },
  );
  const settle = () => new Promise((r) => setTimeout(r, 10));
  const check = async (name: string, offset: number, length: number) => {
    expect(Buffer.from(await cache.read(name, offset, length)!).equals(objects.get(name)!.subarray(offset, offset + length))).toBe(true);
  };
  // a is read twice, early and late; e is announced but never read.
  for (const [name, offset] of [['a', 0], ['b', 0], ['a', 4 * MiB], ['c', 0], ['d', 0], ['e', 0]] as const) cache.expect(name, offset, 100);
  await settle();
  expect(fetches).toEqual(['a', 'b']); // ahead of any read
  await check('a', 0, 100);
  await settle();
  expect(fetches).toEqual(['a', 'b', 'c']);
  await check('b', 0, 100);
  await settle();
  // d fits once b, read in full, may go; a still has a read to come and is kept.
  expect(fetches).toEqual(['a', 'b', 'c', 'd']);
  await check('a', 4 * MiB, 100);
  await check('c', 0, 100);
  await check('d', 0, 100);
  await check('b', 100, 100); // not announced: read all the same (from a smaller window, b having gone)
  await settle();
  expect(fetches.slice(0, 5)).toEqual(['a', 'b', 'c', 'd', 'e']);
  expect(fetches.filter((n) => n === 'a')).toHaveLength(1);
});

it('keeps the announced ranges of a window it drops, and answers their reads from them', async () => {
  const objects = new Map(['a', 'b', 'c', 'd', 'e', 'f'].map((n) => [n, randomBytes(8 * MiB)]));
  const fetches: string[] = [];
  const cache = new RangeCache(
    async (name, offset, length, sink) => {
      fetches.push(`${name}@${offset / MiB}+${length / MiB}`);
      const part = objects.get(name)!.subarray(offset, offset + length);
      sink.size(part.length);
      sink.data(part);
    },
    { windowBytes: 8 * MiB, maxBytes: 16 * MiB, maxRange: 8 * MiB, ahead: 2, keptBytes: MiB },
  );
  const settle = () => new Promise((r) => setTimeout(r, 10));
  const check = async (name: string, offset: number, length: number) => {
    await settle();
    expect(Buffer.from(await cache.read(name, offset, length)!).equals(objects.get(name)!.subarray(offset, offset + length))).toBe(true);
  };
  // Two blobs of a, close together, are read again long after a was left (a shared blob, restic's "stray").
  for (const name of ['a', 'b', 'c', 'd', 'e']) cache.expect(name, 0, 100);
  cache.expect('a', 4 * MiB, 100);
  cache.expect('a', 4 * MiB + 200, 100);
  for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) await check(name, 0, 100); // f, not announced, pushes a out
  expect(fetches).toEqual(['a@0+8', 'b@0+8', 'c@0+8', 'd@0+8', 'e@0+8', 'f@0+8']);
  await check('a', 4 * MiB, 300); // both blobs in one read (a run), from the kept bytes
  expect(fetches).toHaveLength(6);
  await check('a', 4 * MiB + 200, 100); // both reads made: the kept bytes are gone, a small window is read
  expect(fetches.slice(6)).toEqual(['a@4+1']);
});

it('with the windows of a packing, fetches the two packs after the three a restore reads small files from', async () => {
  const packBytes = 8 * MiB;
  // Packs as stored: closed past packBytes, with their last large blob.
  const objects = new Map(['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((n) => [n, randomBytes(packBytes + 5 * MiB)]));
  const fetches: string[] = [];
  const cache = new RangeCache(async (name, offset, length, sink) => {
    fetches.push(name);
    const part = objects.get(name)!.subarray(offset, offset + length);
    sink.size(part.length);
    sink.data(part);
  }, rangeCacheFor(packBytes));
  const settle = () => new Promise((r) => setTimeout(r, 10));
  const check = async (name: string, offset: number, length: number) => {
    expect(Buffer.from(await cache.read(name, offset, length)!).equals(objects.get(name)!.subarray(offset, offset + length))).toBe(true);
  };
  // Small files whose blobs lie in a, b and c by turns, then a large file through d to g.
  for (let i = 0; i < 4; i++) for (const name of ['a', 'b', 'c']) cache.expect(name, i * MiB, 100);
  for (const name of ['d', 'e', 'f', 'g']) cache.expect(name, 0, packBytes);
  for (const name of ['a', 'b', 'c']) await check(name, 0, 100);
  await settle();
  expect(fetches).toEqual(['a', 'b', 'c', 'd', 'e']); // the large file's first packs come while the small files are written
  for (let i = 1; i < 4; i++) for (const name of ['a', 'b', 'c']) await check(name, i * MiB, 100);
  await check('d', 0, packBytes);
  await settle();
  expect(fetches).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  for (const name of ['e', 'f', 'g']) await check(name, 0, packBytes);
  expect(fetches).toHaveLength(7);
});

it('answers a read with its own bytes when its window is dropped and its buffer filled again before the read is taken', async () => {
  const objects = new Map(['a', 'b', 'c'].map((n) => [n, randomBytes(4 * MiB - 4096)]));
  // The bytes come in the fetch's first step, before it awaits anything: a new window is filled at once.
  const cache = new RangeCache(
    async (name, offset, length, sink) => {
      const part = objects.get(name)!.subarray(offset, offset + length);
      sink.size(part.length);
      sink.data(part);
    },
    { windowBytes: 4 * MiB, maxBytes: 4 * MiB, maxRange: 4 * MiB },
  );
  const same = (got: Uint8Array, name: string, offset: number) => Buffer.from(got).equals(objects.get(name)!.subarray(offset, offset + got.length));
  expect(same(await cache.read('a', 0, 1000)!, 'a', 0)).toBe(true);
  // Answered from a's window at once; b's window then drops a's, and c's is filled before a's answer is taken.
  const reads = [cache.read('a', MiB, 64 * 1024)!, cache.read('b', MiB, 64 * 1024)!, cache.read('c', MiB, 64 * 1024)!];
  const [a, b, c] = await Promise.all(reads);
  expect(same(a!, 'a', MiB)).toBe(true);
  expect(same(b!, 'b', MiB)).toBe(true);
  expect(same(c!, 'c', MiB)).toBe(true);
  // Windows dropped and refilled over and over: every answer is its own object's bytes.
  for (let round = 0; round < 20; round++) {
    const name = ['a', 'b', 'c'][round % 3]!;
    const offset = (round % 4) * 512 * 1024;
    const got = await Promise.all([cache.read(name, offset, 4096) ?? Promise.resolve(null), cache.read(['a', 'b', 'c'][(round + 1) % 3]!, offset, 4096) ?? Promise.resolve(null)]);
    if (got[0]) expect(same(got[0], name, offset)).toBe(true);
    if (got[1]) expect(same(got[1], ['a', 'b', 'c'][(round + 1) % 3]!, offset)).toBe(true);
  }
});

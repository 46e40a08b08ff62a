import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { BlobTable, RECORD_BYTES } from './blob-table.ts';

/** An id sharing the first 5 bytes (the segment and the key word a record holds) with `id`. */
function sharingPrefix(id: Uint8Array): Uint8Array {
  const other = new Uint8Array(randomBytes(32));
  other.set(id.subarray(0, 5));
  return other;
}

describe.each([
  ['ids in memory', Infinity],
  ['ids in a temp file', 0],
  ['ids past 64 KiB in a temp file', 64 * 1024],
])('blob table, %s', (_name, idsInMemory) => {
  it('finds every blob by id, type and encryption after growing, and prefers an encrypted copy', () => {
    const table = new BlobTable(16, { idsInMemory });
    const pack = table.packNumber(randomBytes(32));
    const ids = Array.from({ length: 5000 }, () => randomBytes(32));
    ids.forEach((id, i) => expect(table.add(id, 'data', true, 1, pack, i * 100, 99, 200)).toBe(true));
    expect(table.add(ids[0]!, 'data', true, 1, pack, 0, 1, 1)).toBe(false); // already there
    expect(table.add(ids[0]!, 'data', false, 0, pack, 7, 8, 9)).toBe(true); // a plaintext copy is another blob
    expect(table.add(ids[1]!, 'tree', true, 1, pack, 5, 6, 7)).toBe(true); // so is a tree with the same id
    expect(table.size).toBe(5002);
    for (const [i, id] of ids.entries()) {
      const loc = table.location(table.find(id, 'data'));
      expect(loc).toMatchObject({ type: 'data', encrypted: true, comp: 1, offset: i * 100, length: 99, rawLength: 200 });
      expect(Buffer.from(loc.id).equals(id)).toBe(true);
      expect(table.findToRead(id, 'data')).toBe(table.find(id, 'data'));
    }
    expect(table.location(table.slotOf(ids[0]!, 'data', false))).toMatchObject({ encrypted: false, offset: 7 });
    expect(table.location(table.find(ids[1]!, 'tree'))).toMatchObject({ type: 'tree', offset: 5 });
    expect(table.find(randomBytes(32), 'data')).toBe(-1);
    expect(table.findToRead(randomBytes(32), 'data')).toBe(-1);
    expect(table.has(ids[2]!, 'tree', true)).toBe(false);
  });

  it('tells apart blobs whose ids share the bytes a record holds: both are found, and neither is taken for the other', () => {
    const table = new BlobTable(16, { idsInMemory });
    const pack = table.packNumber(randomBytes(32));
    // Enough blobs first that the colliding ids' entries lie in blocks written out (2,048 ids a block).
    for (let i = 0; i < 5000; i++) table.add(randomBytes(32), 'data', true, 1, pack, 1, 1, 1);
    const pairs = Array.from({ length: 200 }, () => {
      const a = randomBytes(32);
      return [a, sharingPrefix(a)] as const;
    });
    for (const [i, [a]] of pairs.entries()) expect(table.add(a, 'data', true, 1, pack, i, 10, 10)).toBe(true);
    for (const [i, [a, b]] of pairs.entries()) {
      // Only `a` is stored: a dedup lookup of `b` must miss, so its data is stored rather than lost.
      expect(table.has(b, 'data', true)).toBe(false);
      expect(table.find(b, 'data')).toBe(-1);
      expect(table.has(a, 'data', true)).toBe(true);
      // A reader that checks what it reads may be sent to the one record of that prefix.
      expect(table.findToRead(b, 'data')).toBe(table.find(a, 'data'));
      expect(table.add(b, 'data', true, 1, pack, 1000 + i, 20, 20)).toBe(true);
    }
    for (let i = 0; i < 5000; i++) table.add(randomBytes(32), 'data', true, 1, pack, 1, 1, 1); // the table grows with both in it
    for (const [i, [a, b]] of pairs.entries()) {
      for (const [id, offset] of [[a, i], [b, 1000 + i]] as const) {
        for (const slot of [table.find(id, 'data'), table.findToRead(id, 'data'), table.slotOf(id, 'data', true)]) {
          const loc = table.location(slot);
          expect(loc.offset).toBe(offset);
          expect(Buffer.from(loc.id).equals(id)).toBe(true);
        }
      }
      expect(table.add(b, 'data', true, 1, pack, 1, 1, 1)).toBe(false);
      expect(table.find(sharingPrefix(a), 'data')).toBe(-1);
      expect(table.has(a, 'data', false)).toBe(false);
      expect(table.has(b, 'tree', true)).toBe(false);
    }
    expect(table.size).toBe(10_400);
  });

  it('keeps a tree and a data blob sharing a prefix apart, and a plaintext copy beside an encrypted one', () => {
    const table = new BlobTable(16, { idsInMemory });
    const pack = table.packNumber(randomBytes(32));
    const a = randomBytes(32);
    const b = sharingPrefix(a);
    table.add(a, 'tree', true, 1, pack, 1, 1, 1);
    table.add(b, 'data', false, 0, pack, 2, 2, 2);
    table.add(a, 'data', false, 0, pack, 3, 3, 3);
    expect(table.location(table.findToRead(a, 'tree'))).toMatchObject({ type: 'tree', offset: 1 });
    expect(table.location(table.findToRead(b, 'data'))).toMatchObject({ type: 'data', offset: 2 });
    expect(table.location(table.findToRead(a, 'data'))).toMatchObject({ type: 'data', offset: 3 });
    expect(table.find(b, 'tree')).toBe(-1);
  });

  it('makes room for a known number of blobs at once: they then go in without growing it, and what it held stays found', () => {
    const table = new BlobTable(1024, { idsInMemory });
    const pack = table.packNumber(randomBytes(32));
    const before = Array.from({ length: 1000 }, () => randomBytes(32));
    for (const id of before) table.add(id, 'data', true, 1, pack, 1, 2, 3);
    table.reserve(75_000);
    const records = table.capacity * RECORD_BYTES;
    expect(records / 76_000).toBeLessThan(31);
    for (let i = 0; i < 50_000; i++) table.add(randomBytes(32), 'data', true, 1, pack, i, 1, 1);
    expect(table.capacity * RECORD_BYTES).toBe(records); // each segment holds its share with room to spare
    for (const id of before) expect(table.location(table.find(id, 'data'))).toMatchObject({ offset: 1, length: 2, rawLength: 3 });
    expect(table.size).toBe(51_000);
    table.reserve(0);
    expect(table.capacity * RECORD_BYTES).toBe(records);
  });
});

describe('blob table memory', () => {
  const tmp = process.env.TMPDIR;
  afterEach(() => {
    if (tmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmp;
  });

  it('costs 30 to 45 bytes a blob in memory (24-byte records, 4/5 to 8/15 full) with its ids in a temp file', () => {
    const table = new BlobTable(1024, { idsInMemory: 0 });
    const pack = table.packNumber(randomBytes(32));
    for (let i = 0; i < 100_000; i++) table.add(randomBytes(32), 'data', true, 1, pack, i, 1, 1);
    expect(RECORD_BYTES).toBe(24);
    const records = (table.capacity * RECORD_BYTES) / table.size;
    expect(records).toBeLessThanOrEqual(45);
    expect(records).toBeGreaterThanOrEqual(30);
    expect(table.bytes - table.capacity * RECORD_BYTES).toBeLessThan(80 * 1024); // one block of ids and the pack list
  });

  it('keeps the first idsInMemory bytes of ids in memory and the rest, but one block, in a temp file', () => {
    const table = new BlobTable(1024, { idsInMemory: 1024 * 1024 });
    const pack = table.packNumber(randomBytes(32));
    const ids = Array.from({ length: 100_000 }, () => randomBytes(32));
    for (const id of ids) table.add(id, 'data', true, 1, pack, 1, 1, 1);
    const idBytes = table.bytes - table.capacity * RECORD_BYTES;
    expect(idBytes).toBeGreaterThan(1024 * 1024);
    expect(idBytes).toBeLessThan(1024 * 1024 + 80 * 1024); // the ids of 100,000 blobs are 3.2 MB
    for (const id of ids) expect(table.has(id, 'data', true)).toBe(true);
  });

  it('keeps its ids in memory when the temp directory cannot be written, and finds every blob', () => {
    process.env.TMPDIR = '/nonexistent/blob-ids';
    const table = new BlobTable(1024, { idsInMemory: 0 });
    const pack = table.packNumber(randomBytes(32));
    const ids = Array.from({ length: 10_000 }, () => randomBytes(32));
    for (const id of ids) table.add(id, 'data', true, 1, pack, 1, 1, 1);
    expect(table.bytes - table.capacity * RECORD_BYTES).toBeGreaterThan(10_000 * 32);
    for (const id of ids) expect(Buffer.from(table.location(table.find(id, 'data')).id).equals(id)).toBe(true);
  });
});

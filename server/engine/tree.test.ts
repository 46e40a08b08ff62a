import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BlobTable, RECORD_BYTES } from './blob-table.ts';
import { decodeTree, encodeTree } from './tree.ts';
import type { TreeNode } from './tree.ts';

const node = (name: string | Uint8Array, extra: Partial<TreeNode> = {}): TreeNode => ({
  name: typeof name === 'string' ? Buffer.from(name) : name,
  type: 'f',
  mode: 0o100644,
  mtimeNs: 1_700_000_000_123_456_789n,
  ctimeNs: -5n,
  ino: 2n ** 63n + 7n,
  size: 2 ** 40 + 3,
  sha256: randomBytes(32),
  chunks: [randomBytes(32), randomBytes(32)],
  ...extra,
});

/** A node with its byte fields as hex and absent fields dropped, for comparing. */
function comparable(n: TreeNode): Record<string, unknown> {
  const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
  const out: Record<string, unknown> = { ...n, name: hex(n.name) };
  if (n.sha256) out.sha256 = hex(n.sha256);
  if (n.chunks) out.chunks = n.chunks.map(hex);
  if (n.subtree) out.subtree = hex(n.subtree);
  if (n.link) out.link = hex(n.link);
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

describe('tree encoding', () => {
  it('round-trips every kind of entry, byte names, large sizes and 64-bit times and inodes', () => {
    const nodes: TreeNode[] = [
      node(Uint8Array.of(0x41, 0xff, 0x5c)),
      node('dir', { type: 'd', mode: 0o40755, size: 0, subtree: randomBytes(32), sha256: undefined, chunks: undefined }),
      node('empty', { size: 0, chunks: [] }),
      node('link', { type: 'l', mode: 0o120777, size: 0, link: Uint8Array.of(0x2e, 0x2e, 0x2f, 0xfe), sha256: undefined, chunks: undefined }),
    ];
    expect(decodeTree(encodeTree(nodes), 'test').map(comparable)).toEqual(nodes.map(comparable));
  });

  it('is the same bytes for the same entries (so equal directories share one tree)', () => {
    const nodes = [node('a'), node('b')];
    expect(Buffer.from(encodeTree(nodes)).equals(Buffer.from(encodeTree(nodes.map((n) => ({ ...n })))))).toBe(true);
  });

  it('refuses unsafe names, entries out of order, and damage', () => {
    for (const bad of ['.', '..', 'a/b', '', 'nul\0']) expect(() => decodeTree(encodeTree([node(bad)]), 't')).toThrow(/unsafe name/);
    expect(() => decodeTree(encodeTree([node('b'), node('a')]), 't')).toThrow(/name order/);
    const good = encodeTree([node('a')]);
    expect(() => decodeTree(good.subarray(0, good.length - 3), 't')).toThrow(/truncated/);
    expect(() => decodeTree(Buffer.concat([good, Uint8Array.of(0)]), 't')).toThrow(/trailing/);
  });
});

describe('blob table', () => {
  it('finds every blob by id, type and encryption after growing, and prefers an encrypted copy', () => {
    const table = new BlobTable(16);
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
    }
    expect(table.location(table.slotOf(ids[0]!, 'data', false))).toMatchObject({ encrypted: false, offset: 7 });
    expect(table.location(table.find(ids[1]!, 'tree'))).toMatchObject({ type: 'tree', offset: 5 });
    expect(table.find(randomBytes(32), 'data')).toBe(-1);
    expect(table.has(ids[2]!, 'tree', true)).toBe(false);
  });

  it('makes room for a known number of blobs at once: they then go in without growing it, and what it held stays found', () => {
    const table = new BlobTable();
    const pack = table.packNumber(randomBytes(32));
    const before = Array.from({ length: 1000 }, () => randomBytes(32));
    for (const id of before) table.add(id, 'data', true, 1, pack, 1, 2, 3);
    table.reserve(75_000);
    const reserved = table.bytes;
    expect(reserved / 76_000).toBeLessThan(92);
    for (let i = 0; i < 50_000; i++) table.add(randomBytes(32), 'data', true, 1, pack, i, 1, 1);
    expect(table.bytes).toBe(reserved); // each segment holds its share with room to spare
    for (const id of before) expect(table.location(table.find(id, 'data'))).toMatchObject({ offset: 1, length: 2, rawLength: 3 });
    expect(table.size).toBe(51_000);
    table.reserve(0);
    expect(table.bytes).toBe(reserved);
  });

  it('costs at most 92 bytes a blob (49-byte records, at least 8/15 full)', () => {
    const table = new BlobTable();
    const pack = table.packNumber(randomBytes(32));
    for (let i = 0; i < 100_000; i++) table.add(randomBytes(32), 'data', true, 1, pack, i, 1, 1);
    expect(RECORD_BYTES).toBe(49);
    expect(table.bytes / table.size).toBeLessThan(92);
    expect(table.bytes / table.size).toBeGreaterThan(61);
  });
});

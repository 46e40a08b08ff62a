import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
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

import { ByteWriter, readVarint } from './codec.ts';
import { EngineError } from './errors.ts';

/**
 * One directory of a snapshot: its entries, sorted by name bytes. A tree is stored as a blob of
 * its own (type tree) whose id is the keyed hash of this encoding, so an identical directory is
 * stored once and an unchanged subtree is shared between snapshots.
 *
 * Encoding (format 2): u8 1 | varint count | entries, each
 *   bytes name | u8 type ('f' | 'd' | 'l') | varint mode | i64 mtime ns | i64 ctime ns | u64 inode
 *   then for 'f': varint size | sha256 (32) | varint n | n chunk ids (32 each)
 *        for 'd': subtree id (32)
 *        for 'l': bytes link target
 */
export type NodeType = 'f' | 'd' | 'l';

export interface TreeNode {
  name: Uint8Array;
  type: NodeType;
  /** st_mode: type and permission bits. */
  mode: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  /** Content bytes (files; 0 otherwise). */
  size: number;
  sha256?: Uint8Array;
  chunks?: Uint8Array[];
  subtree?: Uint8Array;
  link?: Uint8Array;
}

const TREE_VERSION = 1;
const TYPES: Record<number, NodeType> = { 0x66: 'f', 0x64: 'd', 0x6c: 'l' };

export function compareNames(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

export function encodeTree(nodes: readonly TreeNode[]): Uint8Array {
  const w = new ByteWriter(64 + nodes.length * 160);
  w.u8(TREE_VERSION);
  w.varint(nodes.length);
  for (const n of nodes) {
    w.bytes(n.name);
    w.u8(n.type.charCodeAt(0));
    w.varint(n.mode);
    w.i64(n.mtimeNs);
    w.i64(n.ctimeNs);
    w.u64(n.ino);
    if (n.type === 'f') {
      w.varint(n.size);
      w.raw(n.sha256!);
      const chunks = n.chunks ?? [];
      w.varint(chunks.length);
      for (const c of chunks) w.raw(c);
    } else if (n.type === 'd') {
      w.raw(n.subtree!);
    } else {
      w.bytes(n.link!);
    }
  }
  return w.finish();
}

/** A name a tree may hold: not empty, not "." or "..", no "/" and no NUL. */
export function validName(name: Uint8Array): boolean {
  if (name.length === 0 || name.includes(0x2f) || name.includes(0)) return false;
  return !(name[0] === 0x2e && (name.length === 1 || (name.length === 2 && name[1] === 0x2e)));
}

export function decodeTree(data: Uint8Array, what: string): TreeNode[] {
  const c = new TreeCursor(data, what);
  const b = c.bytes;
  const copy = (at: number, n: number): Uint8Array => new Uint8Array(b.subarray(at, at + n));
  const nodes: TreeNode[] = [];
  let previous: Uint8Array | null = null;
  while (c.next()) {
    const name = copy(c.nameAt, c.nameLength);
    if (!validName(name)) throw c.bad('an entry has an unsafe name');
    if (previous && compareNames(previous, name) >= 0) throw c.bad('entries are not in name order');
    previous = name;
    const v = c.view;
    const node: TreeNode = { name, type: c.type, mode: c.mode, mtimeNs: v.getBigInt64(c.statAt, true), ctimeNs: v.getBigInt64(c.statAt + 8, true), ino: v.getBigUint64(c.statAt + 16, true), size: 0 };
    if (c.type === 'f') {
      node.size = c.size;
      node.sha256 = copy(c.sha256At, 32);
      node.chunks = [];
      for (let k = 0; k < c.chunkCount; k++) node.chunks.push(copy(c.chunksAt + 32 * k, 32));
    } else if (c.type === 'd') {
      node.subtree = copy(c.subtreeAt, 32);
    } else {
      node.link = copy(c.linkAt, c.linkLength);
    }
    nodes.push(node);
  }
  return nodes;
}

/**
 * Reads an encoded tree node by node without building objects (a backup compares a directory's
 * listing with it; decodeTree builds the nodes from it): the fields of the current node, and
 * where its bytes lie.
 */
export class TreeCursor {
  readonly bytes: Buffer;
  readonly count: number;
  private readonly what: string;
  private at = 0;
  private read = 0;
  nameAt = 0;
  nameLength = 0;
  type: NodeType = 'f';
  mode = 0;
  /** Where the node's mtime, ctime and inode lie (24 bytes). */
  statAt = 0;
  size = 0;
  sha256At = 0;
  chunksAt = 0;
  chunkCount = 0;
  subtreeAt = 0;
  linkAt = 0;
  linkLength = 0;

  /** Over `bytes`: a 64-bit read makes the one bigint it returns. */
  readonly view: DataView;

  constructor(plain: Uint8Array, what: string) {
    this.bytes = Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength);
    this.view = new DataView(plain.buffer, plain.byteOffset, plain.byteLength);
    this.what = what;
    if (this.u8() !== TREE_VERSION) throw this.bad('unknown tree version');
    this.count = this.varint();
  }

  next(): boolean {
    if (this.read === this.count) {
      if (this.at !== this.bytes.length) throw this.bad('trailing bytes');
      return false;
    }
    this.read++;
    this.nameLength = this.varint();
    this.nameAt = this.skip(this.nameLength);
    const type = TYPES[this.u8()];
    if (!type) throw this.bad('an entry has an unknown type');
    this.type = type;
    this.mode = this.varint();
    this.statAt = this.skip(24);
    if (type === 'f') {
      this.size = this.varint();
      this.sha256At = this.skip(32);
      this.chunkCount = this.varint();
      this.chunksAt = this.skip(32 * this.chunkCount);
    } else if (type === 'd') {
      this.subtreeAt = this.skip(32);
    } else {
      this.linkLength = this.varint();
      this.linkAt = this.skip(this.linkLength);
    }
    return true;
  }

  bad(why: string): EngineError {
    return new EngineError('CORRUPT_DATA', `${this.what}: ${why}`, { object: this.what });
  }

  private skip(n: number): number {
    const at = this.at;
    if (at + n > this.bytes.length) throw this.bad('truncated');
    this.at += n;
    return at;
  }

  /** The next byte (for readVarint). */
  u8(): number {
    return this.bytes[this.skip(1)]!;
  }

  private varint(): number {
    const v = readVarint(this);
    if (v === null) throw this.bad('a bad number');
    return v;
  }
}

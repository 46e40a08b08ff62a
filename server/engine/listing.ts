import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { ByteWriter, readVarint } from './codec.ts';
import { atPath, fdDir, kindOfMode, openFailure } from './source.ts';
import type { EntryKind } from './source.ts';

/**
 * One directory of the source as a backup sees it: its entries in name order, each with its
 * lstat (and a symlink's target), taken through the directory's handle. A listing travels between
 * threads as one compact buffer (transferred, not cloned entry by entry) and is decoded where it
 * is walked.
 *
 * Encoding, per entry: bytes name | u8 kind index (+16 link, +32 error) | varint mode |
 * varint size | i64 mtime ns | i64 ctime ns | u64 inode | u64 device | [bytes link] | [bytes error]
 */
export interface DirEntry {
  name: Uint8Array;
  kind: EntryKind;
  mode: number;
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  dev: bigint;
  link?: Uint8Array;
  /** Set when the entry could not be examined (it vanished, or its link could not be read). */
  error?: string;
}

export interface Listed {
  data: Uint8Array;
  /** Regular files in the directory and their bytes (for the counting scan). */
  files: number;
  bytes: number;
  /** Its subdirectories, in name order (a name's bytes as a latin1 string). */
  dirs: { name: string; dev: bigint; ino: bigint }[];
}

const KINDS: EntryKind[] = ['f', 'd', 'l', 'fifo', 'socket', 'char', 'block', 'other'];
const LINK = 16;
const ERROR = 32;

/** Lists the directory open as `fd` (synchronous: run in a worker thread). */
export function listDirectory(fd: number): Listed | { error: string } {
  // Names as latin1 strings: each byte one character, so they sort in byte order and keep every
  // byte; a Buffer per name made the listing of a directory twice as slow.
  let names: string[];
  try {
    names = readdirSync(fdDir(fd), { encoding: 'latin1' }).sort();
  } catch (err) {
    return { error: `cannot be listed: ${(err as Error).message}` };
  }
  const w = new ByteWriter(64 + names.length * 80);
  const out: Listed = { data: new Uint8Array(0), files: 0, bytes: 0, dirs: [] };
  for (const name of names) {
    const path = atPath(fd, name);
    w.latin1(name);
    let st;
    try {
      st = lstatSync(path, { bigint: true });
    } catch (err) {
      w.u8(KINDS.indexOf('other') | ERROR);
      w.varint(0);
      w.varint(0);
      w.i64(0n);
      w.i64(0n);
      w.u64(0n);
      w.u64(0n);
      w.bytes(Buffer.from(openFailure(err)));
      continue;
    }
    const mode = Number(st.mode);
    const kind = kindOfMode(mode);
    const size = kind === 'f' ? Number(st.size) : 0;
    let link: Uint8Array | null = null;
    let error: string | null = null;
    if (kind === 'l') {
      try {
        link = readlinkSync(path, { encoding: 'buffer' });
      } catch (err) {
        error = openFailure(err);
      }
    } else if (kind === 'f') {
      out.files++;
      out.bytes += size;
    } else if (kind === 'd') {
      out.dirs.push({ name, dev: st.dev, ino: st.ino });
    }
    w.u8(KINDS.indexOf(kind) | (link ? LINK : 0) | (error !== null ? ERROR : 0));
    w.varint(mode);
    w.varint(size);
    w.i64(st.mtimeNs);
    w.i64(st.ctimeNs);
    w.u64(st.ino);
    w.u64(st.dev);
    if (link) w.bytes(link);
    if (error !== null) w.bytes(Buffer.from(error));
  }
  out.data = w.finish();
  return out;
}

/** Reads a listing entry by entry without building objects: the fields of the current entry, and where its bytes lie. */
export class ListingCursor {
  readonly bytes: Buffer;
  private at = 0;
  nameAt = 0;
  nameLength = 0;
  kind: EntryKind = 'other';
  error = false;
  mode = 0;
  size = 0;
  /** Where the entry's mtime, ctime and inode lie: 24 bytes, as a tree (tree.ts) holds them. */
  statAt = 0;
  devAt = 0;
  linkAt = 0;
  linkLength = -1;
  private errorAt = 0;
  private errorLength = 0;

  /** Over `bytes`: a 64-bit read makes the one bigint it returns (Buffer's make several). */
  private readonly view: DataView;

  constructor(data: Uint8Array) {
    this.bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }

  next(): boolean {
    if (this.at >= this.bytes.length) return false;
    this.nameLength = this.varint();
    this.nameAt = this.at;
    this.at += this.nameLength;
    const flags = this.bytes[this.at++]!;
    this.kind = KINDS[flags & 15]!;
    this.error = (flags & ERROR) !== 0;
    this.mode = this.varint();
    this.size = this.varint();
    this.statAt = this.at;
    this.devAt = this.at + 24;
    this.at += 32;
    this.linkLength = -1;
    if (flags & LINK) {
      this.linkLength = this.varint();
      this.linkAt = this.at;
      this.at += this.linkLength;
    }
    if (this.error) {
      this.errorLength = this.varint();
      this.errorAt = this.at;
      this.at += this.errorLength;
    }
    return true;
  }

  name(): Uint8Array {
    return new Uint8Array(this.bytes.subarray(this.nameAt, this.nameAt + this.nameLength));
  }

  ino(): bigint {
    return this.view.getBigUint64(this.statAt + 16, true);
  }

  dev(): bigint {
    return this.view.getBigUint64(this.devAt, true);
  }

  /**
   * The current entry; its name and link target are views of the listing (no buffer of their
   * own per entry): copy them before they are posted to another thread, which would copy the
   * whole listing with them.
   */
  entry(): DirEntry {
    const b = this.bytes;
    const v = this.view;
    return {
      name: new Uint8Array(b.buffer, b.byteOffset + this.nameAt, this.nameLength),
      kind: this.kind,
      mode: this.mode,
      size: this.size,
      mtimeNs: v.getBigInt64(this.statAt, true),
      ctimeNs: v.getBigInt64(this.statAt + 8, true),
      ino: v.getBigUint64(this.statAt + 16, true),
      dev: v.getBigUint64(this.devAt, true),
      link: this.linkLength >= 0 ? new Uint8Array(b.buffer, b.byteOffset + this.linkAt, this.linkLength) : undefined,
      error: this.error ? b.toString('utf8', this.errorAt, this.errorAt + this.errorLength) : undefined,
    };
  }

  /** The next byte (for readVarint). */
  u8(): number {
    return this.bytes[this.at++]!;
  }

  private varint(): number {
    const v = readVarint(this);
    if (v === null) throw new Error('a listing holds a bad number'); // listings are made by listDirectory, never read from storage
    return v;
  }
}

export function decodeListing(data: Uint8Array): DirEntry[] {
  const c = new ListingCursor(data);
  const entries: DirEntry[] = [];
  while (c.next()) entries.push(c.entry());
  return entries;
}

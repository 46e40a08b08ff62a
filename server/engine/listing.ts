import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { ByteReader, ByteWriter } from './codec.ts';
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
  /** Its subdirectories, in name order. */
  dirs: { name: Uint8Array; dev: bigint; ino: bigint }[];
}

const KINDS: EntryKind[] = ['f', 'd', 'l', 'fifo', 'socket', 'char', 'block', 'other'];
const LINK = 16;
const ERROR = 32;

/** Lists the directory open as `fd` (synchronous: run in a worker thread). */
export function listDirectory(fd: number): Listed | { error: string } {
  let names: Buffer[];
  try {
    names = readdirSync(fdDir(fd), { encoding: 'buffer' }).sort(Buffer.compare);
  } catch (err) {
    return { error: `cannot be listed: ${(err as Error).message}` };
  }
  const w = new ByteWriter(64 + names.length * 80);
  const out: Listed = { data: new Uint8Array(0), files: 0, bytes: 0, dirs: [] };
  for (const name of names) {
    const path = atPath(fd, name);
    w.bytes(name);
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

export function decodeListing(data: Uint8Array): DirEntry[] {
  const r = new ByteReader(data, 'a directory listing');
  const entries: DirEntry[] = [];
  while (!r.done) {
    const name = r.bytes();
    const flags = r.u8();
    const e: DirEntry = { name, kind: KINDS[flags & 15]!, mode: r.varint(), size: r.varint(), mtimeNs: r.i64(), ctimeNs: r.i64(), ino: r.u64(), dev: r.u64() };
    if (flags & LINK) e.link = r.bytes();
    if (flags & ERROR) e.error = Buffer.from(r.bytes()).toString();
    entries.push(e);
  }
  return entries;
}

import type { Compression, EntryRecord } from './types.ts';

/**
 * A snapshot is two metadata objects: trees/<id> lists every entry, then snapshots/<id>
 * (written last) is the small header that makes the snapshot exist. Listing snapshots
 * reads headers only.
 */
export interface TreeEntry {
  p: string; // path relative to the source, '/'-separated
  t: 'f' | 'd' | 'l';
  s: number; // size in bytes (files)
  m: number; // st_mode permission and type bits
  mt: string; // mtime, nanoseconds since the epoch
  ct?: string; // ctime ns and inode: how a later backup knows a file is unchanged
  ino?: string;
  h?: string; // sha256 of the content (files)
  l?: string; // symlink target
  c?: string[]; // chunk ids in order (files)
}

export interface SnapshotOptions {
  compression: Compression;
  compressionLevel?: number;
  encryption: boolean;
  deduplication: boolean;
}

export interface SnapshotHeader {
  version: 1;
  id: string;
  time: string;
  hostname: string;
  source: string;
  parent: string | null;
  options: SnapshotOptions;
  summary: { files: number; entries: number; sizeBytes: number; storedBytes: number; errors: number };
}

export const SNAPSHOT_ID = /^[0-9a-f]{64}$/;

const TYPE_NAMES = { f: 'file', d: 'directory', l: 'symlink' } as const;

export function toEntryRecord(e: TreeEntry): EntryRecord {
  const record: EntryRecord = {
    path: e.p,
    type: TYPE_NAMES[e.t],
    size: e.s,
    mode: e.m & 0o7777,
    mtime: new Date(Number(BigInt(e.mt) / 1_000_000n)),
    sha256: e.h ?? null,
  };
  if (e.l !== undefined) record.linkTarget = e.l;
  return record;
}

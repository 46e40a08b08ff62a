import { toHex } from './codec.ts';
import type { TreeNode } from './tree.ts';
import type { Compression, EntryRecord } from './types.ts';

/**
 * A snapshot is a small header, snapshots/<id> (written last: it is what makes the snapshot
 * exist), pointing at the root tree. Listing snapshots reads headers only.
 */
export interface SnapshotOptions {
  compression: Compression;
  compressionLevel?: number;
  encryption: boolean;
  deduplication: boolean;
}

export interface SnapshotSummary {
  /** Regular files and symlinks. */
  files: number;
  directories: number;
  /** Bytes of regular file content. */
  sizeBytes: number;
  storedBytes: number;
  /** Entries that could not be backed up. */
  warnings: number;
}

/** Format 2 header (format 1 headers are read through legacy.ts into the same shape). */
export interface SnapshotHeader {
  version: 1 | 2;
  id: string;
  /** Root tree id (hex); null for a format-1 snapshot, whose tree is trees/<id>. */
  tree: string | null;
  time: string;
  hostname: string;
  source: string;
  parent: string | null;
  options: SnapshotOptions;
  summary: SnapshotSummary;
}

export const SNAPSHOT_ID = /^[0-9a-f]{64}$/;

const TYPE_NAMES = { f: 'file', d: 'directory', l: 'symlink' } as const;

/** The name appended to a relative path ('/'-separated bytes), in a buffer of its own (a name may be a view of a listing). */
export function childPath(parent: Uint8Array, name: Uint8Array): Uint8Array {
  if (parent.length === 0) return name.byteLength === name.buffer.byteLength ? name : name.slice();
  const out = new Uint8Array(parent.length + 1 + name.length);
  out.set(parent);
  out[parent.length] = 0x2f;
  out.set(name, parent.length + 1);
  return out;
}

export function toEntryRecord(path: Uint8Array, n: TreeNode): EntryRecord {
  const record: EntryRecord = {
    path,
    type: TYPE_NAMES[n.type],
    size: n.size,
    mode: n.mode & 0o7777,
    mtime: new Date(Number(n.mtimeNs / 1_000_000n)),
    sha256: n.sha256 ? toHex(n.sha256) : null,
  };
  if (n.link !== undefined) record.linkTarget = n.link;
  return record;
}

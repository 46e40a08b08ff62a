import type { DatabaseSync } from 'node:sqlite';
import { prepare } from './db.ts';

export interface FileRecord {
  path: string;
  type: 'file' | 'directory' | 'symlink';
  sizeBytes: number;
  mode: number;
  modifiedAt: string;
  sha256: string | null;
  linkTarget: string | null;
}

export interface FilePage {
  items: FileRecord[];
  /** The position of the last item, for the next page's `afterSeq`; null when this was the last page. */
  nextSeq: number | null;
}

/** The highest code point; the range [p, p + MAX) holds every path starting with p. */
const MAX_CHAR = '\u{10FFFF}';

function byteOrder(a: FileRecord, b: FileRecord): number {
  return Buffer.compare(Buffer.from(a.path), Buffer.from(b.path));
}

/**
 * The file listing of each completed backup. A listing never changes once written, so each entry
 * gets its position in byte order of path (`seq`), and pages are keyset ranges over it: a cursor is
 * a small integer whatever the path length, and a prefix is a contiguous range of positions.
 */
export class FileStore {
  private readonly db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  /** Writes a whole listing; call inside the transaction that completes the job. */
  insertListing(backupId: string, entries: FileRecord[]): number {
    const sorted = [...entries].sort(byteOrder);
    const stmt = prepare(this.db, 
      `INSERT INTO backup_files (backup_id, seq, path, type, size_bytes, mode, modified_at, sha256, link_target)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    sorted.forEach((e, seq) => stmt.run(backupId, seq, e.path, e.type, e.sizeBytes, e.mode, e.modifiedAt, e.sha256, e.linkTarget));
    return sorted.length;
  }

  /** Entries whose path starts with `prefix`, in byte order of path, after position `afterSeq`. */
  page(backupId: string, opts: { prefix?: string; afterSeq?: number; limit: number }): FilePage {
    const prefix = opts.prefix ?? '';
    const rows = prepare(this.db, 
        `SELECT seq, path, type, size_bytes, mode, modified_at, sha256, link_target FROM backup_files
         WHERE backup_id = ? AND path >= ? AND path < ? AND seq > ?
         ORDER BY seq LIMIT ?`,
      )
      .all(backupId, prefix, prefix + MAX_CHAR, opts.afterSeq ?? -1, opts.limit + 1) as Array<Record<string, string | number | null>>;
    const more = rows.length > opts.limit;
    const kept = more ? rows.slice(0, opts.limit) : rows;
    return {
      items: kept.map((r) => ({
        path: r.path as string,
        type: r.type as FileRecord['type'],
        sizeBytes: r.size_bytes as number,
        mode: r.mode as number,
        modifiedAt: r.modified_at as string,
        sha256: r.sha256 as string | null,
        linkTarget: r.link_target as string | null,
      })),
      nextSeq: more ? (kept[kept.length - 1]!.seq as number) : null,
    };
  }

  /** Whether `path` is an entry of the backup or a directory holding entries. */
  matches(backupId: string, path: string): boolean {
    const row = prepare(this.db, 
        `SELECT 1 AS ok FROM backup_files WHERE backup_id = ? AND (path = ? OR (path >= ? AND path < ?)) LIMIT 1`,
      )
      .get(backupId, path, `${path}/`, `${path}/${MAX_CHAR}`);
    return row !== undefined;
  }

  /** The directories and symlinks a restore of `paths` (null: everything) selects, as the engine selects them. */
  nonFiles(backupId: string, paths: readonly string[] | null): Array<{ path: string; type: 'directory' | 'symlink' }> {
    const rows = prepare(this.db, `SELECT path, type FROM backup_files WHERE backup_id = ? AND type != 'file' ORDER BY seq`).all(backupId) as Array<{
      path: string;
      type: 'directory' | 'symlink';
    }>;
    if (!paths) return rows;
    return rows.filter((r) => paths.some((p) => r.path === p || r.path.startsWith(`${p}/`)));
  }
}

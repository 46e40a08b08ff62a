import type { DatabaseSync } from 'node:sqlite';

export interface FileRecord {
  path: string;
  type: 'file' | 'directory' | 'symlink';
  sizeBytes: number;
  mode: number;
  modifiedAt: string;
  sha256: string | null;
  linkTarget: string | null;
}

/** The highest code point; a prefix range [p, p + MAX) covers every path starting with p. */
const MAX_CHAR = '\u{10FFFF}';

/** The file listing of each completed backup, paged by path (keyset, no OFFSET). */
export class FileStore {
  private readonly db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  /** Inserts entries in batches; call inside the transaction that completes the job. */
  insertMany(backupId: string, entries: Iterable<FileRecord>): number {
    const stmt = this.db.prepare(
      `INSERT OR REPLACE INTO backup_files (backup_id, path, type, size_bytes, mode, modified_at, sha256, link_target)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    let n = 0;
    for (const e of entries) {
      stmt.run(backupId, e.path, e.type, e.sizeBytes, e.mode, e.modifiedAt, e.sha256, e.linkTarget);
      n++;
    }
    return n;
  }

  /** Entries whose path starts with `prefix`, in path order, strictly after `after`. */
  page(backupId: string, opts: { prefix?: string; after?: string; limit: number }): FileRecord[] {
    const prefix = opts.prefix ?? '';
    const rows = this.db
      .prepare(
        `SELECT path, type, size_bytes, mode, modified_at, sha256, link_target FROM backup_files
         WHERE backup_id = ? AND path >= ? AND path < ? AND (? IS NULL OR path > ?)
         ORDER BY path LIMIT ?`,
      )
      .all(backupId, prefix, prefix + MAX_CHAR, opts.after ?? null, opts.after ?? null, opts.limit) as Array<
      Record<string, string | number | null>
    >;
    return rows.map((r) => ({
      path: r.path as string,
      type: r.type as FileRecord['type'],
      sizeBytes: r.size_bytes as number,
      mode: r.mode as number,
      modifiedAt: r.modified_at as string,
      sha256: r.sha256 as string | null,
      linkTarget: r.link_target as string | null,
    }));
  }
}

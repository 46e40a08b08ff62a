import type { FilePage, FileRecord } from '../records.ts';
import type { FileStore } from '../store.ts';
import type { Row, Sql } from './executor.ts';

const COLUMNS = ['backup_id', 'seq', 'path', 'type', 'size_bytes', 'mode', 'modified_at', 'sha256', 'link_target'];
/**
 * Rows per INSERT statement (9 parameters each, far below either database's limit). A batch's
 * rest goes in statements of powers of two, so that a dozen statement texts at most are ever
 * prepared (SQLite keeps each prepared for good, a 499-row one as much as a 500-row one).
 */
const ROWS_PER_INSERT = 512;
const SLASH = 0x2f;
/** Bytes of path kept in `path_head`, the indexed part (as the migrations define it). */
const HEAD = 2048;

/** The smallest byte string greater than every string starting with `prefix`; null when there is none (all 0xff). */
export function prefixEnd(prefix: Uint8Array): Uint8Array | null {
  let end = prefix.length;
  while (end > 0 && prefix[end - 1] === 0xff) end--;
  if (end === 0) return null;
  const out = Uint8Array.from(prefix.subarray(0, end));
  out[end - 1]!++;
  return out;
}

/**
 * Paths starting with `prefix` (and, with `strict`, not equal to it). When the prefix fits in
 * path_head, a range on path_head alone says it (path starts with the prefix exactly when its
 * head does): one indexed range, which the planner estimates well, so it reads the index in
 * order and stops at the page's end. A longer prefix is judged on path in full, within the
 * entries whose head is its first HEAD bytes.
 */
function prefixCondition(prefix: Uint8Array, strict = false): { sql: string[]; params: unknown[] } {
  const end = prefixEnd(prefix);
  const column = prefix.length <= HEAD ? 'path_head' : 'path';
  const sql = [`${column} >= ?`];
  const params: unknown[] = [prefix];
  if (end) {
    sql.push(`${column} < ?`);
    params.push(end);
  }
  if (prefix.length > HEAD) {
    sql.push('path_head = ?');
    params.push(prefix.subarray(0, HEAD));
  }
  if (strict) {
    sql.push('path <> ?');
    params.push(prefix);
  }
  return { sql, params };
}

function toRecord(r: Row): FileRecord {
  return {
    path: r.path as Uint8Array,
    type: r.type as FileRecord['type'],
    sizeBytes: Number(r.size_bytes),
    mode: Number(r.mode),
    modifiedAt: r.modified_at as string,
    sha256: (r.sha256 as string | null) ?? null,
    linkTarget: (r.link_target as Uint8Array | null) ?? null,
  };
}

/**
 * Listings are appended in walk order; each entry gets the next position (`seq`) of its backup,
 * and pages run in byte order of path (ordered by path_head, then path), after the path of the
 * entry whose position the cursor holds. Only one writer appends to a backup (the job running it).
 */
export class SqlFileStore implements FileStore {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  append(backupId: string, records: readonly FileRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return this.sql.transaction(async (tx) => {
      const last = await tx.get<{ n: number | null }>('SELECT MAX(seq) AS n FROM backup_entries WHERE backup_id = ?', [backupId]);
      let seq = last?.n === null || last?.n === undefined ? 0 : Number(last.n) + 1;
      for (let at = 0; at < records.length; ) {
        const left = records.length - at;
        const size = left >= ROWS_PER_INSERT ? ROWS_PER_INSERT : 2 ** Math.floor(Math.log2(left));
        const batch = records.slice(at, at + size);
        at += size;
        const params: unknown[] = [];
        for (const e of batch) params.push(backupId, seq++, e.path, e.type, e.sizeBytes, e.mode, e.modifiedAt, e.sha256, e.linkTarget);
        const row = `(${COLUMNS.map(() => '?').join(', ')})`;
        await tx.run(`INSERT INTO backup_entries (${COLUMNS.join(', ')}) VALUES ${batch.map(() => row).join(', ')}`, params);
      }
    });
  }

  async settle(): Promise<void> {
    const statement = this.sql.dialect.settle('backup_entries');
    if (statement) await this.sql.run(statement);
  }

  async page(backupId: string, opts: { prefix?: Uint8Array; after?: number; limit: number }): Promise<FilePage> {
    const where = ['backup_id = ?'];
    const params: unknown[] = [backupId];
    if (opts.prefix && opts.prefix.length > 0) {
      const c = prefixCondition(opts.prefix);
      where.push(...c.sql);
      params.push(...c.params);
    }
    if (opts.after !== undefined) {
      const anchor = await this.sql.get<{ path: Uint8Array }>('SELECT path FROM backup_entries WHERE backup_id = ? AND seq = ?', [backupId, opts.after]);
      if (!anchor) return { items: [], next: null };
      const head = anchor.path.subarray(0, HEAD);
      // (path_head, path) > the anchor's, written so that the first term is an index range.
      where.push('path_head >= ?', '(path_head > ? OR path > ?)');
      params.push(head, head, anchor.path);
    }
    const rows = await this.sql.all(
      `SELECT seq, path, type, size_bytes, mode, modified_at, sha256, link_target FROM backup_entries
       WHERE ${where.join(' AND ')} ORDER BY path_head, path LIMIT ?`,
      [...params, opts.limit + 1],
    );
    const more = rows.length > opts.limit;
    const kept = more ? rows.slice(0, opts.limit) : rows;
    return { items: kept.map(toRecord), next: more ? Number(kept[kept.length - 1]!.seq) : null };
  }

  async matches(backupId: string, path: Uint8Array): Promise<boolean> {
    const exact = await this.sql.get('SELECT 1 AS ok FROM backup_entries WHERE backup_id = ? AND path_head = ? AND path = ? LIMIT 1', [
      backupId,
      path.subarray(0, HEAD),
      path,
    ]);
    if (exact) return true;
    const under = prefixCondition(Buffer.concat([path, Uint8Array.of(SLASH)]), true);
    const row = await this.sql.get(`SELECT 1 AS ok FROM backup_entries WHERE backup_id = ? AND ${under.sql.join(' AND ')} LIMIT 1`, [backupId, ...under.params]);
    return row !== undefined;
  }
}

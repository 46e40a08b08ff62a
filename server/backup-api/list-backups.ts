import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { presentBackup } from './present.ts';

type Op = BackupOperations['listBackups'];

const BACKUP_ID = /^bkp_[0-9A-HJKMNP-TV-Z]{26}$/;

/** GET /backup: the caller's backups, newest first, keyset-paged by id (ids sort by creation). */
export async function listBackups(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const limit = req.query.limit ?? 20;
  const status = req.query.status;
  const listing = ['backups', accountId, status ?? ''];
  const before = req.query.cursor === undefined ? undefined : decodeCursor(listing, req.query.cursor, BACKUP_ID);
  const rows = await ctx.services.store.jobs.listBackups(accountId, { limit: limit + 1, ...(before ? { before } : {}), ...(status ? { status } : {}) });
  const page = rows.slice(0, limit);
  const next = rows.length > limit ? encodeCursor(listing, page[page.length - 1]!.id) : null;
  return { status: 200, headers: {}, body: successBody({ items: page.map((job) => presentBackup(job, ctx.services.destinations)), next_cursor: next }, ctx.requestId) };
}

import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { backupNotFound } from './get-backup.ts';
import { presentFile } from './present.ts';
import { requestPath } from './request-path.ts';

type Op = BackupOperations['listFiles'];

/** GET /files: one completed backup's entries in byte order of path, keyset-paged. */
export async function listFiles(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const { store } = ctx.services;
  const limit = req.query.limit ?? 100;
  const prefix = req.query.prefix;
  let backup;
  if (req.query.backup_id !== undefined) {
    backup = await store.jobs.getBackup(req.query.backup_id, accountId);
    if (!backup) throw backupNotFound(req.query.backup_id);
    if (backup.status !== 'completed') {
      throw new ApiError('BACKUP_NOT_COMPLETED', `This backup is ${backup.status}; only completed backups have a file list.`, { backup_id: backup.id, status: backup.status });
    }
  } else {
    backup = await store.jobs.newestCompletedBackup(accountId);
    if (!backup) throw new ApiError('BACKUP_NOT_FOUND', 'Your account has no completed backup yet.');
  }
  const listing = ['files', accountId, backup.id, prefix ?? ''];
  const after = req.query.cursor === undefined ? undefined : Number.parseInt(decodeCursor(listing, req.query.cursor, /^[0-9a-z]{1,12}$/), 36);
  const page = await store.files.page(backup.id, {
    limit,
    ...(prefix ? { prefix: requestPath(prefix, '/query/prefix') } : {}),
    ...(after !== undefined ? { after } : {}),
  });
  return {
    status: 200,
    headers: {},
    body: successBody(
      {
        backup_id: backup.id,
        items: page.items.map(presentFile),
        next_cursor: page.next === null ? null : encodeCursor(listing, page.next.toString(36)),
      },
      ctx.requestId,
    ),
  };
}

import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { presentBackup } from './present.ts';

type Op = BackupOperations['getBackup'];

export function backupNotFound(backupId: string): ApiError {
  return new ApiError('BACKUP_NOT_FOUND', 'No backup with this id exists in your account.', { backup_id: backupId });
}

/** GET /backup/{id}: one of the caller's backups; another account's id answers as a missing one. */
export async function getBackup(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const job = await ctx.services.store.jobs.getBackup(req.params.id, accountId);
  if (!job) throw backupNotFound(req.params.id);
  return { status: 200, headers: {}, body: successBody(presentBackup(job, ctx.services.destinations), ctx.requestId) };
}

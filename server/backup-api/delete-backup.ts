import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { forgetBackups } from '../maintenance/forget.ts';
import { backupNotFound } from './get-backup.ts';

type Op = BackupOperations['deleteBackup'];

/** DELETE /backup/{id}: a final backup's snapshot and listing go at once; its data with the next prune. */
export async function deleteBackup(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const job = await ctx.services.store.jobs.getBackup(req.params.id, accountId);
  if (!job) throw backupNotFound(req.params.id);
  if (job.status === 'queued' || job.status === 'running') {
    throw new ApiError('JOB_NOT_FINISHED', `The backup is ${job.status}; cancel it first, then delete it.`, { status: job.status });
  }
  const [deleted] = await forgetBackups(ctx.services, accountId, [job]);
  if (!deleted) throw backupNotFound(req.params.id); // deleted meanwhile by another request
  return { status: 200, headers: {}, body: successBody({ id: job.id, deleted_at: new Date().toISOString() }, ctx.requestId) };
}

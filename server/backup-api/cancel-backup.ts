import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { FINAL_STATUSES } from '../store/jobs.ts';
import { backupNotFound } from './get-backup.ts';
import { presentBackup } from './present.ts';

type Op = BackupOperations['cancelBackup'];

/** POST /backup/{id}/cancel: a queued job is cancelled at once, a running one is signalled. */
export async function cancelBackup(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const { store, queue } = ctx.services;
  const job = store.jobs.getBackup(req.params.id, accountId);
  if (!job) throw backupNotFound(req.params.id);
  const finished = (): ApiError => {
    const status = store.jobs.getBackup(job.id)!.status;
    return new ApiError('JOB_FINISHED', `The backup already ended: it is ${status}.`, { status });
  };
  if (FINAL_STATUSES.includes(job.status)) throw finished();
  if (!queue.cancel('backup', job.id)) throw finished();
  return { status: 202, headers: {}, body: successBody(presentBackup(store.jobs.getBackup(job.id)!), ctx.requestId) };
}

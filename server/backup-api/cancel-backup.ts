import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { FINAL_STATUSES } from '../store/index.ts';
import { backupNotFound } from './get-backup.ts';
import { presentBackup } from './present.ts';

type Op = BackupOperations['cancelBackup'];

/** POST /backup/{id}/cancel: a queued job is cancelled at once; the instance running a running one is told to stop it. */
export async function cancelBackup(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const { store, queue } = ctx.services;
  const job = await store.jobs.getBackup(req.params.id, accountId);
  if (!job) throw backupNotFound(req.params.id);
  const finished = async (): Promise<ApiError> => {
    const { status } = (await store.jobs.getBackup(job.id))!;
    return new ApiError('JOB_FINISHED', `The backup already ended: it is ${status}.`, { status });
  };
  if (FINAL_STATUSES.includes(job.status)) throw await finished();
  ctx.services.events.emit('job.cancel_requested', { job, requestId: ctx.requestId, clientIp: ctx.clientIp });
  if (!(await queue.cancel(job.id))) throw await finished();
  return { status: 202, headers: {}, body: successBody(presentBackup((await store.jobs.getBackup(job.id))!, ctx.services.destinations), ctx.requestId) };
}

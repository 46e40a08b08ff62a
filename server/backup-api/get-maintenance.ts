import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { FINAL_STATUSES } from '../store/index.ts';
import { presentMaintenance } from './present.ts';

type GetOp = BackupOperations['getMaintenanceJob'];
type CancelOp = BackupOperations['cancelMaintenanceJob'];

function notFound(id: string): ApiError {
  return new ApiError('MAINTENANCE_NOT_FOUND', 'No maintenance job with this id exists in your account.', { job_id: id });
}

/** GET /maintenance/{id} */
export async function getMaintenanceJob(req: GetOp['request'], ctx: RequestContext): Promise<GetOp['response']> {
  const job = await ctx.services.store.jobs.getMaintenance(req.params.id, accountOf(ctx).accountId);
  if (!job) throw notFound(req.params.id);
  return { status: 200, headers: {}, body: successBody(presentMaintenance(job), ctx.requestId) };
}

/** POST /maintenance/{id}/cancel: as for backups, a queued job at once, a running one within seconds. */
export async function cancelMaintenanceJob(req: CancelOp['request'], ctx: RequestContext): Promise<CancelOp['response']> {
  const { store, queue } = ctx.services;
  const job = await store.jobs.getMaintenance(req.params.id, accountOf(ctx).accountId);
  if (!job) throw notFound(req.params.id);
  if (FINAL_STATUSES.includes(job.status) || !(await queue.cancel(job.id))) {
    const { status } = (await store.jobs.getMaintenance(job.id))!;
    throw new ApiError('JOB_FINISHED', `The maintenance job already ended: it is ${status}.`, { status });
  }
  return { status: 202, headers: {}, body: successBody(presentMaintenance((await store.jobs.getMaintenance(job.id))!), ctx.requestId) };
}

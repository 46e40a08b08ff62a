import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { maintenanceLockKey } from '../jobs/repositories.ts';
import type { NewMaintenance } from '../store/index.ts';
import { preferWait } from './prefer-wait.ts';
import { presentMaintenance } from './present.ts';
import { queueFull } from './queue-full.ts';

type PruneOp = BackupOperations['createPrune'];
type CheckOp = BackupOperations['createCheck'];
type Created = PruneOp['response'] & CheckOp['response'];

/** Queues a prune or check of the caller's repository in `destination` (one at a time per repository), optionally waiting for it. */
async function submit(ctx: RequestContext, prefer: string | undefined, job: Omit<NewMaintenance, 'id' | 'accountId' | 'repository' | 'trigger'>): Promise<Created> {
  const { accountId } = accountOf(ctx);
  const { store, queue, config, destinations } = ctx.services;
  if (!destinations.has(job.destination)) {
    throw new ApiError('DESTINATION_UNAVAILABLE', `No repository named ${job.destination} is configured.`, { destination: job.destination });
  }
  const id = newId('mnt');
  const submitted = await queue.submitMaintenance({ ...job, id, accountId, repository: maintenanceLockKey(accountId, job.destination), trigger: 'request' });
  if (!submitted) throw queueFull(config.jobs.queueLimit);
  if (!submitted.inserted) {
    const other = submitted.job;
    throw new ApiError('MAINTENANCE_RUNNING', `A ${other.operation} of destination ${other.destination} is already ${other.status}.`, {
      // Another account never shares a repository, so the job is the caller's.
      job_id: other.id,
      destination: other.destination,
    });
  }
  const wait = preferWait(prefer);
  if (wait !== null && wait > 0) await queue.waitSettled(id, wait * 1000);
  return {
    status: 202,
    headers: { Location: `/api/v1/maintenance/${id}`, ...(wait !== null ? { 'Preference-Applied': `wait=${wait}` } : {}) },
    body: successBody(presentMaintenance((await store.jobs.getMaintenance(id))!), ctx.requestId),
  };
}

/** POST /prune */
export function createPrune(req: PruneOp['request'], ctx: RequestContext): Promise<PruneOp['response']> {
  const body = req.body ?? {};
  return submit(ctx, req.headers.prefer, { operation: 'prune', destination: body.destination ?? 'cloud', dryRun: body.dry_run ?? false, readData: false, readDataSubset: null });
}

/** POST /check */
export function createCheck(req: CheckOp['request'], ctx: RequestContext): Promise<CheckOp['response']> {
  const body = req.body ?? {};
  const readData = body.read_data ?? false;
  return submit(ctx, req.headers.prefer, {
    operation: 'check',
    destination: body.destination ?? 'cloud',
    dryRun: false,
    readData,
    readDataSubset: readData ? null : (body.read_data_subset ?? null),
  });
}

import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { confine } from '../allowed-roots.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { repositoryLockKey } from '../jobs/repositories.ts';
import { preferWait } from './prefer-wait.ts';
import { queueFull } from './queue-full.ts';
import { presentBackup } from './present.ts';

type Op = BackupOperations['createBackup'];

/** POST /backup: checks the source and destination, queues the job, optionally waits for it. */
export async function createBackup(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const { store, queue, config } = ctx.services;
  const { source } = req.body;
  const destination = req.body.destination ?? 'cloud';
  const options = {
    compression: req.body.options?.compression ?? 'zstd',
    encryption: req.body.options?.encryption ?? true,
    deduplication: req.body.options?.deduplication ?? true,
  };

  const place = await confine(source, config.allowedRoots, [config.dataDir, ...ctx.services.destinations.localRoots()]);
  if (!place.allowed) throw new ApiError('SOURCE_NOT_ALLOWED', 'The source is outside the allowed backup roots.');
  if (!place.exists) throw new ApiError('INVALID_SOURCE', 'The source path does not exist.', { path: source });
  if (!ctx.services.destinations.has(destination)) {
    throw new ApiError('DESTINATION_UNAVAILABLE', `No repository named ${destination} is configured.`, { destination });
  }

  const id = newId('bkp');
  const queued = await queue.submitBackup({ id, accountId, repository: repositoryLockKey(accountId, destination), source, destination, ...options });
  if (!queued) throw queueFull(config.jobs.queueLimit);
  ctx.services.events.emit('job.requested', { job: queued, requestId: ctx.requestId, clientIp: ctx.clientIp });

  const wait = preferWait(req.headers.prefer);
  if (wait !== null && wait > 0) await queue.waitSettled(id, wait * 1000);
  const job = (await store.jobs.getBackup(id))!;
  return {
    status: 202,
    headers: {
      Location: `/api/v1/backup/${id}`,
      ...(wait !== null ? { 'Preference-Applied': `wait=${wait}` } : {}),
    },
    body: successBody(presentBackup(job, ctx.services.destinations), ctx.requestId),
  };
}

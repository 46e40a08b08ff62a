import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { presentRestore } from './present.ts';

type Op = BackupOperations['getRestore'];

/** GET /restore/{id}: one of the caller's restores; another account's id answers as a missing one. */
export async function getRestore(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const job = await ctx.services.store.jobs.getRestore(req.params.id, accountId);
  if (!job) throw new ApiError('RESTORE_NOT_FOUND', 'No restore with this id exists in your account.', { restore_id: req.params.id });
  return { status: 200, headers: {}, body: successBody(presentRestore(job), ctx.requestId) };
}

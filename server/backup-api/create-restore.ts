import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { BackupOperations } from '../../generated/backup-handlers.ts';
import { blockedAncestor, confine } from '../allowed-roots.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { backupNotFound } from './get-backup.ts';
import { preferWait } from './prefer-wait.ts';
import { requestPath } from './request-path.ts';
import { queueFull } from './queue-full.ts';
import { presentRestore } from './present.ts';

type Op = BackupOperations['createRestore'];

/** The nearest directory that exists at or above `path` must be writable for the restore to create it. */
async function writableDirectoryAtOrAbove(path: string): Promise<boolean> {
  let current = path;
  for (;;) {
    const info = await stat(current).catch(() => null);
    if (info) {
      if (!info.isDirectory()) return false;
      return access(current, constants.W_OK).then(() => true, () => false);
    }
    const parent = dirname(current);
    if (parent === current) return false;
    current = parent;
  }
}

/** POST /restore: checks in the documented order (backup 404/409, roots 403, paths and target 422), then queues. */
export async function createRestore(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const { store, queue, config } = ctx.services;
  const { backup_id: backupId, target_path: targetPath } = req.body;
  const paths = req.body.paths ?? null;
  const overwrite = req.body.overwrite ?? 'never';

  const backup = await store.jobs.getBackup(backupId, accountId);
  if (!backup) throw backupNotFound(backupId);
  if (backup.status !== 'completed') {
    throw new ApiError('BACKUP_NOT_COMPLETED', `Only completed backups can be restored; this one is ${backup.status}.`, { backup_id: backupId, status: backup.status });
  }
  const place = await confine(targetPath, config.allowedRoots, [config.dataDir, ...ctx.services.destinations.localRoots()]);
  if (!place.allowed) throw new ApiError('TARGET_NOT_ALLOWED', 'The target is outside the allowed restore roots.');
  for (const [i, p] of (paths ?? []).entries()) {
    if (!(await store.files.matches(backupId, requestPath(p, `/body/paths/${i}`)))) {
      throw new ApiError('INVALID_SOURCE', 'An entry of paths matches nothing in the backup.', { path: p });
    }
  }
  if (place.exists && !place.isDirectory) throw new ApiError('INVALID_TARGET', 'The target exists and is not a directory.', { path: targetPath });
  if (!(await writableDirectoryAtOrAbove(place.resolved))) {
    throw new ApiError('INVALID_TARGET', 'The target cannot be created or written.', { path: targetPath });
  }
  const blocked = paths && place.exists ? await blockedAncestor(place.resolved, paths) : null;
  if (blocked) {
    throw new ApiError('INVALID_TARGET', 'A directory on the way to a requested path exists in the target as a symlink or file.', {
      path: `${targetPath.replace(/\/+$/, '')}/${blocked}`,
    });
  }

  const id = newId('rst');
  const queued = await queue.submitRestore({ id, accountId, repository: backup.repository, backupId, targetPath, paths, overwrite });
  if (!queued) throw queueFull(config.jobs.queueLimit);
  ctx.services.events.emit('job.requested', { job: queued, requestId: ctx.requestId, clientIp: ctx.clientIp });

  const wait = preferWait(req.headers.prefer);
  if (wait !== null && wait > 0) await queue.waitSettled(id, wait * 1000);
  return {
    status: 202,
    headers: {
      Location: `/api/v1/restore/${id}`,
      ...(wait !== null ? { 'Preference-Applied': `wait=${wait}` } : {}),
    },
    body: successBody(presentRestore((await store.jobs.getRestore(id))!), ctx.requestId),
  };
}

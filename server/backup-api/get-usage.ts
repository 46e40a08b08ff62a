import type { BackupOperations } from '../../generated/backup-handlers.ts';
import type { components } from '../../generated/backup-types.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { usage } from '../engine/index.ts';
import { EngineError } from '../engine/index.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';

type Op = BackupOperations['getUsage'];
type Entry = components['schemas']['Usage']['destinations'][number];

const round = (x: number): number => Math.round(x * 100) / 100;

/** GET /usage: per destination, the account's backups, what the repository occupies (listed from the storage) and the ratios. */
export async function getUsage(_req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const { store, repositories } = ctx.services;
  const destinations: Entry[] = [];
  for (const { name: destination } of ctx.services.destinations.list()) {
    const backups = await store.jobs.completedBackups(accountId, { destination });
    const dryRun = await store.jobs.lastPruneDryRun(accountId, destination);
    const entry: Entry = {
      destination,
      backups: backups.length,
      logical_bytes: backups.reduce((n, b) => n + b.sizeBytes, 0),
      stored_bytes: 0,
      deduplication_ratio: 1,
      compression_ratio: 1,
      reclaimable_bytes: dryRun ? Number((dryRun.outcome as { bytes_deleted?: number } | null)?.bytes_deleted ?? 0) : null,
      reclaimable_as_of: dryRun?.finishedAt ?? null,
    };
    const repo = await repositories.open(accountId, destination, { create: false }).catch((err: unknown) => {
      if (err instanceof EngineError) throw new ApiError('DESTINATION_UNAVAILABLE', `The repository of destination ${destination} cannot be reached.`, { destination });
      throw err;
    });
    if (repo) {
      try {
        const u = await usage(repo);
        entry.stored_bytes = u.storedBytes;
        entry.deduplication_ratio = round(u.uniqueBytes > 0 ? entry.logical_bytes / u.uniqueBytes : 1);
        entry.compression_ratio = round(u.compressionRatio);
      } catch (err) {
        if (err instanceof EngineError) throw new ApiError('DESTINATION_UNAVAILABLE', `The repository of destination ${destination} cannot be reached.`, { destination });
        throw err;
      } finally {
        await repo.close();
      }
    }
    destinations.push(entry);
  }
  return { status: 200, headers: {}, body: successBody({ destinations }, ctx.requestId) };
}

import { EngineError, forget, type Repository } from '../engine/index.ts';
import { ApiError } from '../http/errors.ts';
import type { RepositoryOpener } from '../jobs/repositories.ts';
import type { BackupJob, Store } from '../store/index.ts';

/**
 * Deletes final backups: each snapshot is forgotten in its repository first, then the backup is
 * deleted in the Store (with its listing). A failure between the two leaves a backup whose
 * snapshot is gone, and deleting it again finishes the work; the reverse order could leave a
 * snapshot no backup records, whose data no prune would ever reclaim. Answers the backups deleted,
 * once no server answers them any more.
 */
export async function forgetBackups(services: { store: Store; repositories: RepositoryOpener }, accountId: string, jobs: BackupJob[]): Promise<BackupJob[]> {
  const byDestination = new Map<string, BackupJob[]>();
  for (const j of jobs) byDestination.set(j.destination, [...(byDestination.get(j.destination) ?? []), j]);
  const deleted: BackupJob[] = [];
  for (const [destination, group] of byDestination) {
    const withSnapshot = group.filter((j) => j.snapshotId);
    if (withSnapshot.length > 0) {
      let repo: Repository | null = null;
      try {
        repo = await services.repositories.open(accountId, destination, { create: false });
        if (repo) for (const j of withSnapshot) await forget(repo, j.snapshotId!);
      } catch (err) {
        if (err instanceof EngineError && (err.code === 'DESTINATION_UNAVAILABLE' || err.code === 'STORAGE_FULL')) {
          throw new ApiError('DESTINATION_UNAVAILABLE', `The repository of destination ${destination} cannot be reached; nothing more was deleted.`, { destination });
        }
        throw err;
      } finally {
        await repo?.close();
      }
    }
    for (const j of group) {
      const outcome = await services.store.jobs.deleteBackup(j.id, accountId);
      if (outcome && typeof outcome === 'object') deleted.push(outcome);
    }
  }
  // Answered only once no server still answers them.
  if (deleted.length > 0) await services.store.jobs.deletionsSeen();
  return deleted;
}

import { fromStorage } from './errors.ts';
import type { Repository } from './repository.ts';
import { SNAPSHOT_ID } from './snapshot.ts';

/**
 * Forgets a snapshot: removes its header (and a format-1 snapshot's tree object). Its data stays
 * until a prune finds nothing else uses it. Forgetting one that does not exist is no error.
 */
export async function forget(repo: Repository, snapshotId: string): Promise<void> {
  repo.assertOpen();
  if (!SNAPSHOT_ID.test(snapshotId)) return;
  const header = await repo.snapshot(snapshotId).catch(() => null);
  try {
    await repo.backend.remove(`snapshots/${snapshotId}`);
    if (header?.tree === null) await repo.backend.remove(`trees/${snapshotId}`);
  } catch (err) {
    throw fromStorage(err);
  }
  repo.forgetHeader(snapshotId);
}

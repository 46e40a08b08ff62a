import type { Repository } from './repository.ts';
import { toEntryRecord } from './snapshot.ts';
import type { EntryRecord } from './types.ts';

/** Every entry of a snapshot, in tree order (parents before children). */
export async function* listEntries(repo: Repository, snapshotId: string): AsyncIterable<EntryRecord> {
  repo.assertOpen();
  for (const e of await repo.tree(snapshotId)) yield toEntryRecord(e);
}

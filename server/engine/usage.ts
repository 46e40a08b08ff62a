import { fromStorage } from './errors.ts';
import type { Repository } from './repository.ts';

/**
 * What a repository occupies and holds: the bytes of every object on the storage (packs,
 * index files, snapshots, config, locks), the logical bytes of its snapshots (file content as
 * backed up, each snapshot counted whole), and the unique data it stores before and after
 * compression. Ratios: deduplication = logical / unique, compression = unique / stored chunks.
 */
export interface RepositoryUsage {
  snapshots: number;
  storedBytes: number;
  packBytes: number;
  metadataBytes: number;
  logicalBytes: number;
  uniqueBytes: number;
  chunkBytes: number;
  deduplicationRatio: number;
  compressionRatio: number;
}

export async function usage(repo: Repository): Promise<RepositoryUsage> {
  repo.assertOpen();
  let storedBytes = 0;
  let packBytes = 0;
  try {
    for await (const o of repo.backend.list('')) {
      storedBytes += o.size;
      if (o.name.startsWith('data/')) packBytes += o.size;
    }
    await repo.refreshIndex();
  } catch (err) {
    throw fromStorage(err);
  }
  const snapshots = await repo.snapshots();
  const logicalBytes = snapshots.reduce((n, s) => n + s.summary.sizeBytes, 0);
  const table = repo.index.table;
  let uniqueBytes = 0;
  let chunkBytes = 0;
  for (const slot of table.slots()) {
    if (table.isTree(slot)) continue;
    uniqueBytes += table.rawLengthOf(slot);
    chunkBytes += table.lengthOf(slot);
  }
  return {
    snapshots: snapshots.length,
    storedBytes,
    packBytes,
    metadataBytes: storedBytes - packBytes,
    logicalBytes,
    uniqueBytes,
    chunkBytes,
    deduplicationRatio: uniqueBytes > 0 ? logicalBytes / uniqueBytes : 1,
    compressionRatio: chunkBytes > 0 ? uniqueBytes / chunkBytes : 1,
  };
}

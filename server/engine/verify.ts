import { ChunkReader } from './chunk-reader.ts';
import { EngineError } from './errors.ts';
import type { BlobLocation } from './master-index.ts';
import type { Repository } from './repository.ts';

export interface VerifyResult {
  chunksChecked: number;
  errors: { chunk?: string; path?: string; message: string }[];
}

const CONCURRENCY = 8;

/**
 * Re-reads every chunk of one snapshot (or, without an id, every chunk the index lists),
 * checking the GCM tag and the keyed hash. Problems are listed, not thrown; only a missing
 * snapshot throws (SNAPSHOT_NOT_FOUND).
 */
export async function verify(repo: Repository, snapshotId?: string): Promise<VerifyResult> {
  repo.assertOpen();
  await repo.refreshIndex();
  const errors: VerifyResult['errors'] = [];
  const work: { id: string; path?: string; loc?: BlobLocation }[] = [];
  if (snapshotId !== undefined) {
    const seen = new Set<string>();
    for (const e of await repo.tree(snapshotId)) {
      for (const id of e.c ?? []) {
        if (seen.has(id)) continue;
        seen.add(id);
        const loc = repo.index.find(id);
        if (loc) work.push({ id, path: e.p, loc });
        else work.push({ id, path: e.p });
      }
    }
  } else {
    for (const loc of repo.index.all()) work.push({ id: loc.id, loc });
  }
  // Pack order, then offset: each pack is read front to back.
  work.sort((a, b) => (a.loc?.pack ?? '').localeCompare(b.loc?.pack ?? '') || (a.loc?.offset ?? 0) - (b.loc?.offset ?? 0));
  const reader = new ChunkReader(repo);
  let next = 0;
  const runner = async (): Promise<void> => {
    while (next < work.length) {
      const item = work[next++]!;
      const where = item.path !== undefined ? { path: item.path } : {};
      if (!item.loc) {
        errors.push({ chunk: item.id, ...where, message: 'chunk is not in the repository index' });
        continue;
      }
      await reader.budget.acquire(item.loc.rawLength);
      try {
        await reader.read(item.loc);
      } catch (err) {
        errors.push({ chunk: item.id, ...where, message: err instanceof EngineError ? err.message : `cannot read: ${(err as Error).message}` });
      } finally {
        reader.budget.release(item.loc.rawLength);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: CONCURRENCY }, runner));
  } finally {
    await reader.close();
  }
  return { chunksChecked: work.length, errors };
}

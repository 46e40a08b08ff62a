import { pathToText } from '../escaped-path.ts';
import { ChunkReader } from './chunk-reader.ts';
import { toHex } from './codec.ts';
import { EngineError } from './errors.ts';
import { WorkerPool } from './pool.ts';
import type { Repository } from './repository.ts';
import { childPath } from './snapshot.ts';
import { SnapshotTrees, TreeLoader } from './trees.ts';
import type { TreeNode } from './tree.ts';

export interface VerifyResult {
  /** Blobs read and checked. */
  chunksChecked: number;
  errors: { chunk?: string; path?: string; message: string }[];
}

const CONCURRENCY = 8;

/**
 * Re-reads every chunk of one snapshot (or, without an id, every blob the index lists, trees
 * included), checking the GCM tag and the keyed hash. Problems are listed, not thrown; only a
 * missing snapshot throws (SNAPSHOT_NOT_FOUND). A snapshot's trees are streamed, and each chunk
 * is read once however many files share it (a bitmap over the index's slots remembers which).
 */
export async function verify(repo: Repository, snapshotId?: string): Promise<VerifyResult> {
  repo.assertOpen();
  await repo.refreshIndex();
  const errors: VerifyResult['errors'] = [];
  const problem = (err: unknown, where: { chunk?: string; path?: string }): void => {
    errors.push({ ...where, message: err instanceof EngineError ? err.message : `cannot read: ${(err as Error).message}` });
  };
  const pool = new WorkerPool(repo.key);
  const reader = new ChunkReader(repo, pool);
  const table = repo.index.table;
  const inFlight = new Set<Promise<void>>();
  let checked = 0;
  /** Reads one data blob, a few at a time. */
  const check = async (slot: number, path?: string): Promise<void> => {
    while (inFlight.size >= CONCURRENCY) await Promise.race(inFlight);
    checked++;
    const loc = table.location(slot);
    const task = (async () => {
      await reader.budget.acquire(loc.rawLength);
      try {
        await reader.read(loc);
      } catch (err) {
        problem(err, { chunk: toHex(loc.id), ...(path !== undefined ? { path } : {}) });
      } finally {
        reader.budget.release(loc.rawLength);
      }
    })();
    inFlight.add(task);
    void task.finally(() => inFlight.delete(task));
  };
  try {
    if (snapshotId !== undefined) {
      const trees = await SnapshotTrees.open(repo, snapshotId);
      const seen = new Uint8Array(table.capacity);
      const walk = async (nodes: TreeNode[], rel: Uint8Array): Promise<void> => {
        for (const n of nodes) {
          const path = childPath(rel, n.name);
          if (n.type === 'd') {
            let sub: TreeNode[] | null = null;
            try {
              sub = (await trees.children(n)).nodes;
            } catch (err) {
              problem(err, { path: pathToText(path) });
            }
            if (sub) await walk(sub, path);
            continue;
          }
          for (const id of n.chunks ?? []) {
            const slot = table.find(id, 'data');
            if (slot < 0) errors.push({ chunk: toHex(id), path: pathToText(path), message: 'chunk is not in the repository index' });
            else if (!seen[slot]) {
              seen[slot] = 1;
              await check(slot, pathToText(path));
            }
          }
        }
      };
      let root: TreeNode[] | null = null;
      try {
        root = (await trees.root()).nodes;
      } catch (err) {
        problem(err, {});
      }
      if (root) await walk(root, new Uint8Array(0));
    } else {
      // Pack order, then offset: each pack is read front to back.
      const slots = Uint32Array.from(table.slots());
      slots.sort((a, b) => table.packOf(a) - table.packOf(b) || table.offsetOf(a) - table.offsetOf(b));
      const trees = new TreeLoader(repo);
      for (const slot of slots) {
        const loc = table.location(slot);
        if (loc.type === 'data') {
          await check(slot);
          continue;
        }
        checked++;
        try {
          await trees.load(loc.id);
        } catch (err) {
          problem(err, { chunk: toHex(loc.id) });
        }
      }
    }
    await Promise.all(inFlight);
  } finally {
    pool.close();
  }
  return { chunksChecked: checked, errors };
}

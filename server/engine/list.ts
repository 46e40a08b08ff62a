import type { Repository } from './repository.ts';
import { childPath, toEntryRecord } from './snapshot.ts';
import { SnapshotTrees } from './trees.ts';
import type { TreeNode } from './tree.ts';
import type { EntryRecord } from './types.ts';

/**
 * Every entry of a snapshot, depth first (a directory, then what it holds), each directory's
 * entries in name order. Streams the trees: holds the directories on the current path only.
 */
export async function* listEntries(repo: Repository, snapshotId: string): AsyncIterable<EntryRecord> {
  repo.assertOpen();
  const trees = await SnapshotTrees.open(repo, snapshotId);
  async function* walk(nodes: TreeNode[], rel: Uint8Array): AsyncGenerator<EntryRecord> {
    for (const n of nodes) {
      const path = childPath(rel, n.name);
      yield toEntryRecord(path, n);
      if (n.type === 'd') yield* walk((await trees.children(n)).nodes, path);
    }
  }
  yield* walk((await trees.root()).nodes, new Uint8Array(0));
}

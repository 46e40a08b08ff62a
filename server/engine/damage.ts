import type { BlobType } from './blob-table.ts';
import { EngineError, throwIfAborted } from './errors.ts';
import type { Repository } from './repository.ts';
import { childPath } from './snapshot.ts';
import type { TreeNode } from './tree.ts';
import { SnapshotTrees } from './trees.ts';

/**
 * Which snapshots and paths a set of bad blobs affects: every snapshot's directories are walked
 * (only when a check found problems), and a file that uses a bad chunk, or a directory whose
 * tree is bad or cannot be read, is named. The empty path stands for the snapshot's root.
 */
export interface Affected {
  snapshotId: string;
  /** The first MAX_PATHS paths. */
  paths: Uint8Array[];
  pathCount: number;
}

const MAX_PATHS = 100;

/** `isBad` tells a blob that is damaged or missing. */
export async function findAffected(repo: Repository, snapshotIds: string[], isBad: (type: BlobType, id: Uint8Array) => boolean, signal?: AbortSignal): Promise<Affected[]> {
  const out: Affected[] = [];
  for (const snapshotId of snapshotIds) {
    throwIfAborted(signal);
    const affected: Affected = { snapshotId, paths: [], pathCount: 0 };
    const name = (path: Uint8Array): void => {
      affected.pathCount++;
      if (affected.paths.length < MAX_PATHS) affected.paths.push(path);
    };
    let trees: SnapshotTrees;
    try {
      trees = await SnapshotTrees.open(repo, snapshotId, signal);
    } catch (err) {
      if (err instanceof EngineError && err.code === 'CANCELLED') throw err;
      name(new Uint8Array(0));
      out.push(affected);
      continue;
    }
    const walk = async (nodes: TreeNode[], rel: Uint8Array): Promise<void> => {
      for (const n of nodes) {
        const path = childPath(rel, n.name);
        if (n.type === 'f') {
          if ((n.chunks ?? []).some((c) => isBad('data', c))) name(path);
        } else if (n.type === 'd') {
          if (n.subtree && isBad('tree', n.subtree)) {
            name(path);
            continue;
          }
          let sub: TreeNode[];
          try {
            sub = (await trees.children(n)).nodes;
          } catch (err) {
            if (err instanceof EngineError && err.code === 'CANCELLED') throw err;
            name(path);
            continue;
          }
          await walk(sub, path);
        }
      }
    };
    const header = trees.snapshot;
    if (header.tree !== null && isBad('tree', Buffer.from(header.tree, 'hex'))) name(new Uint8Array(0));
    else {
      try {
        await walk((await trees.root()).nodes, new Uint8Array(0));
      } catch (err) {
        if (err instanceof EngineError && err.code === 'CANCELLED') throw err;
        name(new Uint8Array(0));
      }
    }
    if (affected.pathCount > 0) out.push(affected);
  }
  return out;
}

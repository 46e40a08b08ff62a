import { pathToText } from '../escaped-path.ts';
import { EngineError } from './errors.ts';
import type { Dir, SnapshotTrees } from './trees.ts';
import type { TreeNode } from './tree.ts';

/**
 * Which part of a snapshot a restore writes: everything, or the subtrees named by `paths`
 * ('/'-separated byte paths relative to the source; a directory stands for its subtree). A
 * selection is a little trie over names: `ALL` below a named path, a map on the way to one.
 */
export const ALL = 'all';
export type Selection = typeof ALL | Map<string, Selection>;

function key(name: Uint8Array): string {
  return Buffer.from(name.buffer, name.byteOffset, name.byteLength).toString('latin1');
}

function components(path: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let start = 0;
  for (let i = 0; i <= path.length; i++) {
    if (i === path.length || path[i] === 0x2f) {
      const part = path.subarray(start, i);
      if (part.length > 0 && !(part.length === 1 && part[0] === 0x2e)) out.push(part);
      start = i + 1;
    }
  }
  return out;
}

/** The selection for `paths` (none: everything); PATH_NOT_FOUND naming every path the snapshot does not hold. */
export async function select(trees: SnapshotTrees, root: Dir, paths: readonly Uint8Array[] | undefined): Promise<Selection> {
  if (!paths || paths.length === 0) return ALL;
  const top = new Map<string, Selection>();
  const missing: string[] = [];
  for (const path of paths) {
    const parts = components(path);
    if (parts.length === 0) return ALL;
    let nodes: TreeNode[] | null = root.nodes;
    let level: Map<string, Selection> | typeof ALL = top;
    for (let i = 0; i < parts.length; i++) {
      const node: TreeNode | undefined = nodes?.find((n) => Buffer.compare(n.name, parts[i]!) === 0);
      if (!node) {
        missing.push(pathToText(path));
        break;
      }
      if (level !== ALL) {
        const k = key(parts[i]!);
        if (i === parts.length - 1) {
          level.set(k, ALL);
          break;
        }
        let next: Selection | undefined = level.get(k);
        if (next === undefined) {
          next = new Map();
          level.set(k, next);
        }
        level = next; // ALL when a shorter path already selected this subtree
      }
      if (i === parts.length - 1) break;
      nodes = node.type === 'd' ? (await trees.children(node)).nodes : null;
    }
  }
  if (missing.length > 0) throw new EngineError('PATH_NOT_FOUND', `not in the snapshot: ${missing.join(', ')}`, { paths: missing });
  return top;
}

/** The selection below one entry of a directory: undefined when the entry is not selected. */
export function below(selection: Selection, name: Uint8Array): Selection | undefined {
  return selection === ALL ? ALL : selection.get(key(name));
}

import { fromHex } from './codec.ts';
import type { SnapshotHeader, SnapshotOptions } from './snapshot.ts';
import { compareNames } from './tree.ts';
import type { TreeNode } from './tree.ts';

/**
 * Read support for format 1 (written by 1.0.0): a snapshot's whole tree is one object,
 * trees/<snapshot id>, a flat list of entries with '/'-separated text paths, parents first. It
 * is turned here into the per-directory nodes that format 2 stores, so restore, listing and the
 * next backup's change detection treat both formats alike.
 */
export interface V1Entry {
  p: string;
  t: 'f' | 'd' | 'l';
  s: number;
  m: number;
  mt: string;
  ct?: string;
  ino?: string;
  h?: string;
  l?: string;
  c?: string[];
}

interface V1Header {
  version: 1;
  id: string;
  time: string;
  hostname: string;
  source: string;
  parent: string | null;
  options: SnapshotOptions;
  summary: { files: number; entries: number; sizeBytes: number; storedBytes: number; errors: number };
}

export function fromV1Header(h: V1Header): SnapshotHeader {
  return {
    version: 1,
    id: h.id,
    tree: null,
    time: h.time,
    hostname: h.hostname,
    source: h.source,
    parent: h.parent,
    options: h.options,
    summary: { files: h.summary.files, directories: h.summary.entries - h.summary.files, sizeBytes: h.summary.sizeBytes, storedBytes: h.summary.storedBytes, warnings: h.summary.errors },
  };
}

/** The directories of a format-1 tree: the root's nodes, and each directory node's children. */
export interface LegacyTree {
  root: TreeNode[];
  children: Map<TreeNode, TreeNode[]>;
}

export function fromV1Tree(entries: readonly V1Entry[]): LegacyTree {
  const dirs = new Map<string, TreeNode[]>([['', []]]);
  const children = new Map<TreeNode, TreeNode[]>();
  for (const e of entries) {
    const slash = e.p.lastIndexOf('/');
    const parent = slash < 0 ? '' : e.p.slice(0, slash);
    const node: TreeNode = {
      name: new Uint8Array(Buffer.from(e.p.slice(slash + 1), 'utf8')),
      type: e.t,
      mode: e.m,
      mtimeNs: BigInt(e.mt),
      ctimeNs: BigInt(e.ct ?? '0'),
      ino: BigInt(e.ino ?? '0'),
      size: e.t === 'f' ? e.s : 0,
    };
    if (e.t === 'f') {
      node.sha256 = fromHex(e.h ?? '');
      node.chunks = (e.c ?? []).map(fromHex);
    }
    if (e.t === 'l') node.link = new Uint8Array(Buffer.from(e.l ?? '', 'utf8'));
    let siblings = dirs.get(parent);
    if (!siblings) {
      siblings = [];
      dirs.set(parent, siblings);
    }
    siblings.push(node);
    if (e.t === 'd') {
      let own = dirs.get(e.p);
      if (!own) {
        own = [];
        dirs.set(e.p, own);
      }
      children.set(node, own);
    }
  }
  for (const list of dirs.values()) list.sort((a, b) => compareNames(a.name, b.name));
  return { root: dirs.get('')!, children };
}

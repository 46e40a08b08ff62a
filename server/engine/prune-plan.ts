import type { BlobTable, BlobType } from './blob-table.ts';

/**
 * What a prune does with each pack, from the blob table, the `used` marks over its slots and the
 * listing of the repository's packs (name → size):
 *
 * - **delete**: no blob in it is used (or it is listed by no index file: left by an interrupted
 *   backup or an interrupted prune);
 * - **repack**: at least REPACK_THRESHOLD of it is unused (garbage, duplicates, blobs no index
 *   lists): its used blobs are copied into new packs, then it is deleted;
 * - **keep**: the rest; its unused bytes stay until it crosses the threshold.
 *
 * The figures are the cost a dry run answers before anything happens.
 */
export const REPACK_THRESHOLD = 0.5;
/** What a new pack header and index file cost per blob (id, flags, three varints), for estimates. */
const LIST_BYTES_PER_BLOB = 42;
const PACK_OVERHEAD = 64;

export interface PackListing {
  /** Pack id (hex) → size in bytes. */
  sizes: Map<string, number>;
}

export interface PrunePlan {
  /** Pack numbers of the table, by fate. */
  repack: number[];
  keep: number[];
  /** Pack ids (hex) to delete whole: all garbage, or unindexed. */
  remove: string[];
  /** Packs the index lists that do not exist although they hold used blobs (the prune must not go on). */
  missingLive: string[];
  /** Used blobs' slots, sorted by pack then offset; `from[n]`…`from[n + 1]` are pack n's. */
  liveSlots: Uint32Array;
  from: Uint32Array;
  packType: (n: number) => BlobType;
  figures: PlanFigures;
}

export interface PlanFigures {
  packsDeleted: number;
  packsRepacked: number;
  packsKept: number;
  unindexedPacks: number;
  /** Bytes of the packs deleted (whole, repacked and unindexed). */
  packBytesDeleted: number;
  /** Used bytes copied out of repacked packs (each read and written once). */
  bytesRewritten: number;
  /** Estimated bytes of the new packs and index files. */
  bytesWritten: number;
  /** Unused bytes left in kept packs. */
  garbageKept: number;
  liveBlobs: number;
  liveBytes: number;
}

/** Plans the fate of every pack; `indexed` lists the packs other index files (written meanwhile) cover, which are kept. */
export function planPrune(table: BlobTable, used: Uint8Array, listing: PackListing, indexed: ReadonlySet<string>, threshold = REPACK_THRESHOLD): PrunePlan {
  const packs = table.packCount;
  const liveBytes = new Float64Array(packs);
  const liveCount = new Uint32Array(packs + 1);
  const tree = new Uint8Array(packs);
  let live = 0;
  for (const slot of table.slots()) {
    const n = table.packOf(slot);
    if (table.isTree(slot)) tree[n] = 1;
    if (!used[slot]) continue;
    liveBytes[n] = liveBytes[n]! + table.lengthOf(slot);
    liveCount[n] = liveCount[n]! + 1;
    live++;
  }
  // Counting sort of the used slots by pack, then by offset within each pack.
  const from = new Uint32Array(packs + 1);
  for (let n = 0; n < packs; n++) from[n + 1] = from[n]! + liveCount[n]!;
  const liveSlots = new Uint32Array(live);
  const fill = from.slice(0, packs);
  for (const slot of table.slots()) if (used[slot]) liveSlots[fill[table.packOf(slot)]!++] = slot;
  for (let n = 0; n < packs; n++) {
    if (liveCount[n]! > 1) liveSlots.subarray(from[n], from[n + 1]).sort((a, b) => table.offsetOf(a) - table.offsetOf(b));
  }

  const plan: PrunePlan = { repack: [], keep: [], remove: [], missingLive: [], liveSlots, from, packType: (n) => (tree[n] ? 'tree' : 'data'), figures: emptyFigures() };
  const f = plan.figures;
  const known = new Set<string>();
  const rewritten: Record<BlobType, { bytes: number; blobs: number }> = { data: { bytes: 0, blobs: 0 }, tree: { bytes: 0, blobs: 0 } };
  for (let n = 0; n < packs; n++) {
    const id = table.packId(n);
    known.add(id);
    const size = listing.sizes.get(id);
    if (size === undefined) {
      if (liveCount[n]! > 0) plan.missingLive.push(id);
      continue; // nothing to delete; its blobs leave the index
    }
    f.liveBytes += liveBytes[n]!;
    if (indexed.has(id)) {
      // Another index file (written meanwhile, by a writer that saved the same pack) lists it too.
      plan.keep.push(n);
      f.packsKept++;
      f.garbageKept += size - liveBytes[n]!;
    } else if (liveCount[n] === 0) {
      plan.remove.push(id);
      f.packsDeleted++;
      f.packBytesDeleted += size;
    } else if ((size - liveBytes[n]!) / size >= threshold) {
      plan.repack.push(n);
      f.packsRepacked++;
      f.packBytesDeleted += size;
      f.bytesRewritten += liveBytes[n]!;
      rewritten[plan.packType(n)].bytes += liveBytes[n]!;
      rewritten[plan.packType(n)].blobs += liveCount[n]!;
    } else {
      plan.keep.push(n);
      f.packsKept++;
      f.garbageKept += size - liveBytes[n]!;
    }
  }
  for (const [id, size] of listing.sizes) {
    if (known.has(id) || indexed.has(id)) continue;
    plan.remove.push(id);
    f.unindexedPacks++;
    f.packBytesDeleted += size;
  }
  f.liveBlobs = live;
  // New packs: the copied blobs plus a header each (packs of the usual size); the new index lists every used blob.
  for (const type of ['data', 'tree'] as const) {
    const r = rewritten[type];
    if (r.blobs === 0) continue;
    const newPacks = Math.max(1, Math.ceil(r.bytes / (type === 'tree' ? 4 : 16) / 1024 / 1024));
    f.bytesWritten += r.bytes + r.blobs * LIST_BYTES_PER_BLOB + newPacks * PACK_OVERHEAD;
  }
  f.bytesWritten += live * LIST_BYTES_PER_BLOB + (plan.keep.length + plan.repack.length) * PACK_OVERHEAD;
  return plan;
}

function emptyFigures(): PlanFigures {
  return { packsDeleted: 0, packsRepacked: 0, packsKept: 0, unindexedPacks: 0, packBytesDeleted: 0, bytesRewritten: 0, bytesWritten: 0, garbageKept: 0, liveBlobs: 0, liveBytes: 0 };
}

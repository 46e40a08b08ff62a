import { createHash } from 'node:crypto';
import { BlobTable } from './blob-table.ts';
import type { BlobType } from './blob-table.ts';
import { toHex } from './codec.ts';
import { findAffected } from './damage.ts';
import type { Affected } from './damage.ts';
import { EngineError, abortable, fromStorage, throwIfAborted } from './errors.ts';
import { LOCK_TIMING, RepositoryLock } from './locks.ts';
import type { LockTiming } from './locks.ts';
import { INDEX_IDS_IN_MEMORY, addIndexFile } from './master-index.ts';
import { decodeAnyMeta } from './meta.ts';
import { packName } from './pack.ts';
import { WorkerPool } from './pool.ts';
import { Reachability } from './reachability.ts';
import type { Repository } from './repository.ts';
import type { SnapshotHeader } from './snapshot.ts';
import { SNAPSHOT_ID } from './snapshot.ts';

/**
 * Check: the structure of a repository (every index file readable, every indexed blob inside an
 * existing pack of sufficient size, every snapshot readable, its trees readable and every blob
 * they reference indexed), and with `readData` (or a share of the packs, `readDataSubset`) the
 * contents: each pack read is hashed against its name and each of its blobs authenticated
 * (decrypted, decompressed and matched with its keyed id). Problems name the snapshots and paths
 * they affect. A check holds a lock that no prune may hold beside it; backups run alongside.
 */
export interface CheckOptions {
  readData?: boolean;
  /** Share of the packs to read, 0 to 1 (a random pick each time, so repeated checks cover all). */
  readDataSubset?: number;
  signal?: AbortSignal;
  onProgress?: (p: { phase: 'structure' | 'data'; packsDone: number; packsTotal: number }) => void;
  lockTiming?: LockTiming;
}

export interface CheckProblem {
  message: string;
  pack?: string;
  blob?: string;
  snapshotId?: string;
}

export interface CheckResult {
  ok: boolean;
  snapshots: number;
  trees: number;
  packs: number;
  packsRead: number;
  bytesRead: number;
  blobsRead: number;
  /** The first MAX_PROBLEMS problems; `problemCount` is the total. */
  problems: CheckProblem[];
  problemCount: number;
  affected: Affected[];
  /** Packs no index lists (left by interrupted writers; the next prune removes them) and their bytes. */
  unindexedPacks: number;
  unindexedBytes: number;
  /** Indexed bytes no snapshot uses: what a prune could reclaim. */
  unusedBytes: number;
}

const MAX_PROBLEMS = 100;
const READERS = 4;

export async function check(repo: Repository, opts: CheckOptions = {}): Promise<CheckResult> {
  repo.assertOpen();
  throwIfAborted(opts.signal);
  const lock = await RepositoryLock.acquire(repo, 'check', opts.lockTiming ?? LOCK_TIMING);
  const pool = new WorkerPool(repo.key);
  try {
    return await run(repo, opts, pool);
  } catch (err) {
    throw fromStorage(err);
  } finally {
    pool.close();
    await lock.release();
  }
}

async function run(repo: Repository, opts: CheckOptions, pool: WorkerPool): Promise<CheckResult> {
  const { signal } = opts;
  const result: CheckResult = { ok: true, snapshots: 0, trees: 0, packs: 0, packsRead: 0, bytesRead: 0, blobsRead: 0, problems: [], problemCount: 0, affected: [], unindexedPacks: 0, unindexedBytes: 0, unusedBytes: 0 };
  const problem = (p: CheckProblem): void => {
    result.problemCount++;
    if (result.problems.length < MAX_PROBLEMS) result.problems.push(p);
  };
  const bad = new Set<string>();
  const markBad = (type: BlobType, id: Uint8Array): void => void bad.add(`${type}:${toHex(id)}`);
  await repo.refreshIndex();

  // Snapshots first: each one's index files exist before its header, so a backup committing
  // meanwhile never looks like a snapshot with missing blobs.
  const headers: SnapshotHeader[] = [];
  for await (const { name } of repo.backend.list('snapshots/')) {
    const id = name.slice('snapshots/'.length);
    if (!SNAPSHOT_ID.test(id)) continue;
    try {
      headers.push(await repo.snapshot(id));
    } catch (err) {
      if (err instanceof EngineError && err.code === 'SNAPSHOT_NOT_FOUND') continue; // forgotten meanwhile
      if (!(err instanceof EngineError) || err.code !== 'CORRUPT_DATA') throw err;
      problem({ message: `snapshot ${id} cannot be read: ${err.message}`, snapshotId: id });
      result.affected.push({ snapshotId: id, paths: [new Uint8Array(0)], pathCount: 1 });
    }
  }
  // Index files, each on its own: a damaged one is a problem, not the end of the check.
  const table = new BlobTable(1024, { idsInMemory: INDEX_IDS_IN_MEMORY });
  for await (const { name } of repo.backend.list('index/')) {
    try {
      addIndexFile(table, repo.key, name, await abortable(repo.backend.load(name), signal));
    } catch (err) {
      if (!(err instanceof EngineError) || err.code !== 'CORRUPT_DATA') throw err;
      problem({ message: `index file ${name} cannot be read: ${err.message}` });
    }
  }
  const sizes = new Map<string, number>();
  for await (const o of repo.backend.list('data/')) sizes.set(o.name.slice(o.name.lastIndexOf('/') + 1), o.size);
  const extent = new Float64Array(table.packCount);
  for (const slot of table.slots()) {
    const n = table.packOf(slot);
    extent[n] = Math.max(extent[n]!, table.offsetOf(slot) + table.lengthOf(slot));
  }
  const badPack = new Uint8Array(table.packCount);
  for (let n = 0; n < table.packCount; n++) {
    const id = table.packId(n);
    const size = sizes.get(id);
    if (size === undefined) problem({ message: `pack ${id} is missing`, pack: id });
    else if (size < extent[n]!) problem({ message: `pack ${id} is shorter than its index says`, pack: id });
    else continue;
    badPack[n] = 1;
  }
  for (const slot of table.slots()) if (badPack[table.packOf(slot)]) markBad(table.isTree(slot) ? 'tree' : 'data', table.location(slot).id);
  result.packs = table.packCount;
  for (const [id, size] of sizes) {
    if (table.hasPack(id)) continue;
    result.unindexedPacks++;
    result.unindexedBytes += size;
  }

  result.snapshots = headers.length;
  opts.onProgress?.({ phase: 'structure', packsDone: 0, packsTotal: 0 });
  const reach = new Reachability(
    repo,
    table,
    null,
    (p) => {
      markBad(p.type, p.id);
      problem({ message: p.message, blob: toHex(p.id) });
    },
    signal,
  );
  for (const h of headers) await reach.addSnapshot(h);
  await reach.run();
  result.trees = reach.trees;
  for (const slot of table.slots()) if (!reach.used[slot]) result.unusedBytes += table.lengthOf(slot);

  if (opts.readData || (opts.readDataSubset ?? 0) > 0) await readPacks(repo, table, badPack, opts, pool, result, problem, markBad);

  if (result.problemCount > 0) {
    result.ok = false;
    const named = new Set(result.affected.map((a) => a.snapshotId));
    const isBad = (type: BlobType, id: Uint8Array): boolean => bad.has(`${type}:${toHex(id)}`) || table.find(id, type) < 0;
    result.affected.push(...(await findAffected(repo, headers.map((h) => h.id).filter((id) => !named.has(id)), isBad, signal)));
  }
  return result;
}

/** Reads the packs picked, hashing each against its name and authenticating each blob. */
async function readPacks(
  repo: Repository,
  table: BlobTable,
  badPack: Uint8Array,
  opts: CheckOptions,
  pool: WorkerPool,
  result: CheckResult,
  problem: (p: CheckProblem) => void,
  markBad: (type: BlobType, id: Uint8Array) => void,
): Promise<void> {
  const { signal } = opts;
  const bySlot: number[][] = Array.from({ length: table.packCount }, () => []);
  for (const slot of table.slots()) bySlot[table.packOf(slot)]!.push(slot);
  let picked = [...bySlot.keys()].filter((n) => !badPack[n]);
  if (!opts.readData) {
    const share = Math.min(1, Math.max(0, opts.readDataSubset ?? 0));
    picked = picked.filter(() => Math.random() < share);
  }
  let next = 0;
  let done = 0;
  const reader = async (): Promise<void> => {
    while (next < picked.length) {
      throwIfAborted(signal);
      const n = picked[next++]!;
      const id = table.packId(n);
      const data = await abortable(repo.backend.load(packName(id)), signal);
      result.packsRead++;
      result.bytesRead += data.length;
      // Format-1 packs are not named by their hash: their blobs alone are authenticated.
      if (createHash('sha256').update(data).digest('hex') !== id && !isFormat1Pack(repo, data, id)) {
        problem({ message: `pack ${id} does not match its name (its bytes changed)`, pack: id });
      }
      await Promise.all(
        bySlot[n]!.map(async (slot) => {
          const loc = table.location(slot);
          result.blobsRead++;
          try {
            await pool.decode(loc, data.subarray(loc.offset, loc.offset + loc.length));
          } catch (err) {
            if (!(err instanceof EngineError) || err.code !== 'CORRUPT_DATA') throw err;
            markBad(loc.type, loc.id);
            problem({ message: `${loc.type} blob ${toHex(loc.id)} in pack ${id}: ${err.message}`, pack: id, blob: toHex(loc.id) });
          }
        }),
      );
      opts.onProgress?.({ phase: 'data', packsDone: ++done, packsTotal: picked.length });
    }
  };
  await Promise.all(Array.from({ length: READERS }, reader));
}

/** Whether a pack's header says it was written by 1.0.0 (JSON, not binary). */
function isFormat1Pack(repo: Repository, data: Uint8Array, id: string): boolean {
  try {
    const length = Buffer.from(data.buffer, data.byteOffset, data.byteLength).readUInt32LE(data.length - 4);
    return 'json' in decodeAnyMeta(repo.key, 'pack-header', data.subarray(data.length - 4 - length, data.length - 4), id);
  } catch {
    return false;
  }
}

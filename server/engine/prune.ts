import { setTimeout as sleep } from 'node:timers/promises';
import { EngineError, abortable, fromStorage, throwIfAborted } from './errors.ts';
import { LOCK_TIMING, RepositoryLock } from './locks.ts';
import type { LockInfo, LockTiming } from './locks.ts';
import { MasterIndex } from './master-index.ts';
import { packName } from './pack.ts';
import { listMarkers, writeMarker } from './prune-marker.ts';
import type { BlobKey } from './prune-marker.ts';
import { REPACK_THRESHOLD, planPrune } from './prune-plan.ts';
import type { PlanFigures } from './prune-plan.ts';
import { Reachability } from './reachability.ts';
import type { Unreachable } from './reachability.ts';
import { repackAndIndex } from './repack.ts';
import type { Repository } from './repository.ts';

/**
 * Prune: removes what no snapshot references, while backups of the same repository go on (see
 * "Prune while backups run" in the README). Order of the writes, each safe to be cut short:
 *
 *   1. marker prune/<id> listing the candidates (blobs no snapshot references);
 *   2. wait until every lock seen after the marker was saved is gone (those backups may use candidates);
 *   3. walk the snapshots written meanwhile: what they use is no candidate any more;
 *   4. new packs for the used blobs of mostly-garbage packs, then index files for all that is kept;
 *   5. remove the index files the prune read (their content is in the new ones);
 *   6. delete the packs no index lists any more, and packs left by interrupted writers;
 *   7. remove the marker, stale markers and stale locks.
 */
export interface PruneOptions {
  /** Answers the cost and changes nothing. */
  dryRun?: boolean;
  signal?: AbortSignal;
  onProgress?: (p: PruneProgress) => void;
  /** A pack with at least this share of unused bytes is rewritten (default REPACK_THRESHOLD). */
  repackThreshold?: number;
  lockTiming?: LockTiming;
  /** How often the wait for older writers looks at the locks (ms). */
  pollMs?: number;
  /** Test hook: called once the marker is saved, before waiting for writers. */
  afterMarker?: () => Promise<void> | void;
}

export type PrunePhase = 'marking' | 'waiting' | 'repacking' | 'deleting';

export interface PruneProgress {
  phase: PrunePhase;
  packsDone: number;
  packsTotal: number;
}

export interface PruneResult extends PlanFigures {
  dryRun: boolean;
  snapshots: number;
  /** Bytes removed from the storage: packs, replaced index files, leftovers of interrupted saves (dry run: predicted). */
  bytesDeleted: number;
  /** Bytes the repository occupies (lock objects aside) before and after (dry run: predicted after). */
  bytesBefore: number;
  bytesRemaining: number;
  indexFilesReplaced: number;
}

const POLL_MS = 2000;

export async function prune(repo: Repository, opts: PruneOptions = {}): Promise<PruneResult> {
  repo.assertOpen();
  throwIfAborted(opts.signal);
  const lock = await RepositoryLock.acquire(repo, 'prune', opts.lockTiming ?? LOCK_TIMING);
  try {
    return await run(repo, lock, opts);
  } catch (err) {
    throw fromStorage(err);
  } finally {
    await lock.release();
  }
}

async function run(repo: Repository, lock: RepositoryLock, opts: PruneOptions): Promise<PruneResult> {
  const { signal } = opts;
  const progress = (phase: PrunePhase, packsDone = 0, packsTotal = 0): void => opts.onProgress?.({ phase, packsDone, packsTotal });
  progress('marking');
  const oldMarkers = await listMarkers(repo);
  // Snapshots before the index: a snapshot's index files exist before its header, so every
  // snapshot listed finds its blobs in the index loaded after (a backup that commits in between
  // is walked after the wait).
  const headers = await repo.snapshots();
  const primary = new MasterIndex();
  await abortable(primary.refresh(repo.backend, repo.key), signal);
  const table = primary.table;
  const problems: Unreachable[] = [];
  const onProblem = (p: Unreachable): void => void problems.push(p);
  const reach = new Reachability(repo, table, null, onProblem, signal);
  const seen = new Set<string>();
  for (const header of headers) {
    seen.add(header.id);
    await reach.addSnapshot(header);
  }
  await reach.run();
  refuseDamaged(problems);

  let cutoff: number;
  let marker: string | null = null;
  let extraIndexed = new Set<string>();
  let snapshots = seen.size;
  if (opts.dryRun) {
    // Packs that running backups have not indexed yet are not counted as leftovers.
    const others = (await lock.others()).filter((l) => !l.stale);
    cutoff = others.length > 0 ? Math.min(...others.map((l) => Date.parse(l.created))) : Infinity;
  } else {
    const keys = candidates(table, reach.used);
    marker = await abortable(writeMarker(repo, keys.iterate(), keys.count), signal);
    cutoff = (await repo.backend.stat(marker)).modified.getTime();
    await opts.afterMarker?.();
    progress('waiting');
    await waitForWriters(lock, await lock.others(), opts.pollMs ?? POLL_MS, signal);
    // What backups committed meanwhile: their snapshots may use candidates (older writers) and
    // their index files list packs the prune must keep.
    const later = await repo.snapshots();
    const extra = new MasterIndex();
    await abortable(extra.refresh(repo.backend, repo.key, primary.files), signal);
    const again = new Reachability(repo, table, extra.table, onProblem, signal, reach.used);
    for (const header of later) {
      if (seen.has(header.id)) continue;
      snapshots++;
      await again.addSnapshot(header);
    }
    await again.run();
    refuseDamaged(problems);
    for (let n = 0; n < extra.table.packCount; n++) extraIndexed.add(extra.table.packId(n));
  }

  const objects = await listObjects(repo);
  const sizes = new Map<string, number>();
  for (const [name, o] of objects) {
    if (!name.startsWith('data/')) continue;
    const id = name.slice(name.lastIndexOf('/') + 1);
    // A pack that no index lists and that is newer than the marker belongs to a backup at work.
    if (o.modified >= cutoff && !table.hasPack(id)) continue;
    sizes.set(id, o.size);
  }
  const plan = planPrune(table, reach.used, { sizes }, extraIndexed, opts.repackThreshold ?? REPACK_THRESHOLD);
  if (plan.missingLive.length > 0) {
    throw new EngineError('CORRUPT_DATA', `${plan.missingLive.length} pack(s) that snapshots use are missing; nothing was deleted (run a check)`, { packs: plan.missingLive.slice(0, 20) });
  }
  let bytesBefore = 0;
  for (const o of objects.values()) bytesBefore += o.size;
  let indexBytes = 0;
  for (const name of primary.files) indexBytes += objects.get(name)?.size ?? 0;
  const f = plan.figures;
  const result: PruneResult = {
    ...f,
    dryRun: opts.dryRun === true,
    snapshots,
    bytesDeleted: f.packBytesDeleted + indexBytes,
    bytesBefore,
    bytesRemaining: bytesBefore - f.packBytesDeleted - indexBytes + f.bytesWritten,
    indexFilesReplaced: primary.files.size,
  };
  if (opts.dryRun) return result;

  const total = plan.repack.length + plan.remove.length;
  progress('repacking', 0, total);
  let done = 0;
  const written = await repackAndIndex(repo, table, plan, signal, () => progress('repacking', ++done, total));
  lock.assertHeld();
  for (const name of primary.files) {
    throwIfAborted(signal);
    await repo.backend.remove(name);
  }
  // The readers of this process see the new index at once (others on their next miss).
  await repo.refreshIndex();
  progress('deleting', done, total);
  lock.assertHeld();
  const doomed = [...plan.remove, ...plan.repack.map((n) => table.packId(n))];
  for (const id of doomed) {
    throwIfAborted(signal);
    await repo.backend.remove(packName(id));
    progress('deleting', ++done, total);
  }
  const temps = repo.backend.removeUnfinished ? await repo.backend.removeUnfinished(new Date(cutoff)) : { count: 0, bytes: 0 };
  await cleanUp(repo, lock, marker!, oldMarkers);
  result.bytesWritten = written.bytesWritten;
  result.bytesDeleted = f.packBytesDeleted + indexBytes + temps.bytes;
  result.bytesRemaining = 0;
  for (const o of (await listObjects(repo)).values()) result.bytesRemaining += o.size;
  return result;
}

/** The unused blobs of the table, as the marker lists them. */
function candidates(table: MasterIndex['table'], used: Uint8Array): { count: number; iterate: () => Iterable<BlobKey> } {
  let count = 0;
  for (const slot of table.slots()) if (!used[slot]) count++;
  return {
    count,
    *iterate() {
      for (const slot of table.slots()) {
        if (used[slot]) continue;
        const loc = table.location(slot);
        yield { id: loc.id, type: loc.type, encrypted: loc.encrypted };
      }
    },
  };
}

/** A prune never deletes on a partial picture: a tree it cannot read may reference anything. */
function refuseDamaged(problems: Unreachable[]): void {
  if (problems.length === 0) return;
  throw new EngineError('CORRUPT_DATA', `the repository is damaged (${problems[0]!.message}${problems.length > 1 ? ` and ${problems.length - 1} more` : ''}); nothing was deleted (run a check)`, {
    problems: problems.slice(0, 20).map((p) => p.message),
  });
}

/** Waits until none of `locks` (those seen once the marker was saved) is live any more. */
async function waitForWriters(lock: RepositoryLock, locks: LockInfo[], pollMs: number, signal: AbortSignal | undefined): Promise<void> {
  const waiting = new Set(locks.filter((l) => !l.stale).map((l) => l.name));
  while (waiting.size > 0) {
    await sleep(pollMs, undefined, { signal }).catch(() => throwIfAborted(signal));
    lock.assertHeld();
    const live = new Set((await lock.others()).filter((l) => !l.stale).map((l) => l.name));
    for (const name of waiting) if (!live.has(name)) waiting.delete(name);
  }
}

/** Removes this prune's marker, the markers of prunes that died, and locks whose holders died. */
async function cleanUp(repo: Repository, lock: RepositoryLock, marker: string, oldMarkers: string[]): Promise<void> {
  for (const name of [marker, ...oldMarkers]) await repo.backend.remove(name);
  for (const l of await lock.others()) if (l.stale) await repo.backend.remove(l.name);
}

async function listObjects(repo: Repository): Promise<Map<string, { size: number; modified: number }>> {
  const out = new Map<string, { size: number; modified: number }>();
  // Lock objects come and go with the operations at work: they are not what the repository holds.
  for await (const o of repo.backend.list('')) if (!o.name.startsWith('locks/')) out.set(o.name, { size: o.size, modified: o.modified.getTime() });
  return out;
}

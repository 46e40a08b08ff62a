import type { BigIntStats } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname } from 'node:path';
import { SourceWalk } from './backup-walk.ts';
import type { Listing, WalkHooks } from './backup-walk.ts';
import { BlobWriter } from './blob-writer.ts';
import { toHex } from './codec.ts';
import { compressionCode } from './compress.ts';
import { randomId } from './crypto.ts';
import { EngineError, abortable, cancellable, errnoCode, fromStorage, throwIfAborted } from './errors.ts';
import { RepositoryLock } from './locks.ts';
import { WORKERS_BESIDE_MAIN, WorkerPool } from './pool.ts';
import { readAvoid } from './prune-marker.ts';
import { ProgressReporter } from './progress.ts';
import type { Repository } from './repository.ts';
import { startScan } from './scan.ts';
import type { Scan } from './scan.ts';
import type { SnapshotHeader, SnapshotOptions } from './snapshot.ts';
import { DIR_FLAGS, kindOfMode, openFd } from './source.ts';
import { SnapshotTrees } from './trees.ts';
import type { Compression, EntryRecord, Progress, Warnings } from './types.ts';
import { WarningList } from './warnings.ts';
import type { DirEntry } from './listing.ts';

export interface BackupOptions extends WalkHooks {
  /** An absolute path: a directory (its contents are backed up) or a single file. */
  source: string;
  compression: Compression;
  compressionLevel?: number;
  encryption: boolean;
  deduplication: boolean;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** Receives every entry of the snapshot, in batches, as its directory is stored (awaited: a slow receiver slows the backup). */
  onEntries?: (batch: EntryRecord[]) => void | Promise<void>;
  /** Tuning (tests, benchmarks): from what worker backlog a chunk is encoded on this thread (pool.ts, INLINE_BACKLOG). */
  inlineBacklog?: number;
}

export interface BackupResult {
  snapshotId: string;
  /** Regular files and symlinks in the snapshot. */
  files: number;
  directories: number;
  /** Bytes of regular file content. */
  sizeBytes: number;
  /** Bytes written to the repository by this backup. */
  storedBytes: number;
  warnings: Warnings;
}

const ENTRY_BATCH = 2000;

async function resolveSource(source: string): Promise<{ root: string; stats: BigIntStats }> {
  try {
    const root = await realpath(source);
    return { root, stats: await lstat(root, { bigint: true }) };
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') {
      throw new EngineError('SOURCE_NOT_FOUND', `source ${source} does not exist`, { path: source });
    }
    throw new EngineError('SOURCE_UNREADABLE', `cannot read source ${source}: ${(err as Error).message}`, { path: source });
  }
}

/** The newest snapshot of the same source written with the same encryption: its unchanged files are not read again. */
async function parentSnapshot(repo: Repository, root: string, encryption: boolean, signal: AbortSignal | undefined): Promise<SnapshotTrees | null> {
  const latest = (await repo.snapshots()).filter((s) => s.source === root && s.options.encryption === encryption).at(-1);
  return latest ? new SnapshotTrees(repo, latest, signal) : null;
}

/** Entries handed out in batches, one batch at a time, in the order directories finish. */
class EntryStream {
  private batch: EntryRecord[] = [];
  private chain: Promise<void> = Promise.resolve();
  private readonly sink: BackupOptions['onEntries'];
  private readonly signal: AbortSignal | undefined;

  constructor(sink: BackupOptions['onEntries'], signal: AbortSignal | undefined) {
    this.sink = sink;
    this.signal = signal;
  }

  push = async (entries: EntryRecord[]): Promise<void> => {
    if (!this.sink) return;
    this.batch.push(...entries);
    if (this.batch.length >= ENTRY_BATCH) await this.flush();
  };

  flush(): Promise<void> {
    const batch = this.batch;
    this.batch = [];
    const sink = this.sink;
    if (batch.length > 0 && sink) this.chain = this.chain.then(() => sink(batch));
    return abortable(this.chain, this.signal);
  }
}

/**
 * Backs up `source` into a new snapshot. Entries that cannot be backed up (unreadable,
 * vanished, changed while read, special files) are skipped and reported in `warnings`; the
 * snapshot holds everything else. Cancelled with CANCELLED within seconds whatever it waits for;
 * the repository stays consistent (packs whole or absent, no snapshot).
 */
export async function backup(repo: Repository, opts: BackupOptions): Promise<BackupResult> {
  repo.assertOpen();
  throwIfAborted(opts.signal);
  const { root, stats } = await resolveSource(opts.source);
  // Taken before anything is read: a prune that starts later either waits for this backup or is seen by it.
  const lock = await RepositoryLock.acquire(repo, 'backup');
  const progress = new ProgressReporter(opts.onProgress);
  progress.emit();
  // On 2 cores a second worker made no backup of the real tree or of a 1 GiB file faster, and cost 20–25 MB.
  const pool = new WorkerPool(repo.key, WORKERS_BESIDE_MAIN, { inlineBacklog: opts.inlineBacklog });
  const scan = startScan(root, (files, bytes) => progress.setTotals(files, bytes));
  const stop = (): void => {
    pool.close();
    scan.stop();
  };
  try {
    return await cancellable(opts.signal, stop, () => run(repo, opts, root, stats, pool, scan, progress, lock));
  } catch (err) {
    throw fromStorage(err);
  } finally {
    stop();
    await lock.release();
  }
}

async function run(repo: Repository, opts: BackupOptions, root: string, stats: BigIntStats, pool: WorkerPool, scan: Scan, progress: ProgressReporter, lock: RepositoryLock): Promise<BackupResult> {
  const { signal } = opts;
  const avoid = await readAvoid(repo);
  await repo.refreshIndex();
  const parent = opts.deduplication ? await parentSnapshot(repo, root, opts.encryption, signal) : null;
  const writer = new BlobWriter(repo, pool, { comp: compressionCode(opts.compression), level: opts.compressionLevel, encrypt: opts.encryption }, opts.deduplication, signal, avoid);
  const warnings = new WarningList();
  const entries = new EntryStream(opts.onEntries, signal);
  const walk = new SourceWalk({
    repo,
    writer,
    listDir: (req) => pool.listDir(req),
    scanned: (dir) => scan.listing(dir),
    parent,
    encryption: opts.encryption,
    warnings,
    progress,
    emit: opts.onEntries ? entries.push : null,
    signal,
    hooks: opts,
  });
  let rootTree: Uint8Array;
  try {
    const parentRoot = parent ? await parent.root().catch(() => null) : null;
    const listing = await listRoot(root, stats, walk);
    rootTree = await (await walk.dir(listing, new Uint8Array(0), parentRoot))();
    await entries.flush();
    throwIfAborted(signal);
    await writer.finish();
  } catch (err) {
    await writer.abandon();
    throw err;
  }
  throwIfAborted(signal);
  const options: SnapshotOptions = { compression: opts.compression, encryption: opts.encryption, deduplication: opts.deduplication };
  if (opts.compressionLevel !== undefined) options.compressionLevel = opts.compressionLevel;
  const header: SnapshotHeader = {
    version: 2,
    id: randomId(),
    tree: toHex(rootTree),
    time: new Date().toISOString(),
    hostname: hostname(),
    source: root,
    parent: parent?.snapshot.id ?? null,
    options,
    summary: { files: walk.files, directories: walk.directories, sizeBytes: walk.sizeBytes, storedBytes: writer.storedBytes, warnings: warnings.count },
  };
  lock.assertHeld();
  // Cancelled while the snapshot is being saved: the job says cancelled, so no snapshot either.
  const saving = repo.saveSnapshot(header);
  const forget = (): void => void saving.then(() => repo.backend.remove(`snapshots/${header.id}`)).catch(() => {});
  header.summary.storedBytes += await abortable(saving, signal).catch((err: unknown) => {
    forget();
    throw err;
  });
  if (signal?.aborted) {
    forget();
    throwIfAborted(signal);
  }
  progress.finish();
  return {
    snapshotId: header.id,
    files: walk.files,
    directories: walk.directories,
    sizeBytes: walk.sizeBytes,
    storedBytes: header.summary.storedBytes,
    warnings: warnings.result(),
  };
}

/** The source's root as a listed directory: the directory itself, or, for a single file, its parent listed with that file alone. */
async function listRoot(root: string, stats: BigIntStats, walk: SourceWalk): Promise<Listing> {
  const unreadable = (why: string): EngineError => new EngineError('SOURCE_UNREADABLE', `cannot read source ${root}: ${why}`, { path: root });
  if (stats.isDirectory()) {
    const listing = await walk.list(root, { dev: stats.dev, ino: stats.ino });
    if ('error' in listing) throw listing.code === 'ENOENT' ? new EngineError('SOURCE_NOT_FOUND', `source ${root} does not exist`, { path: root }) : unreadable(listing.error);
    return listing;
  }
  if (!stats.isFile()) throw unreadable(`it is not a directory or a regular file`);
  // A plain descriptor (not a FileHandle): the walk closes it, like any directory's.
  const fd = await openFd(dirname(root), DIR_FLAGS).catch((err: unknown) => {
    throw unreadable((err as Error).message);
  });
  const name = Buffer.from(basename(root));
  const entry: DirEntry = {
    name,
    kind: kindOfMode(Number(stats.mode)),
    mode: Number(stats.mode),
    size: Number(stats.size),
    mtimeNs: stats.mtimeNs,
    ctimeNs: stats.ctimeNs,
    ino: stats.ino,
    dev: stats.dev,
  };
  return { fd, entries: [entry] };
}

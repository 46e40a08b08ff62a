import type { BlobLocation, BlobType } from './blob-table.ts';
import { Budget } from './budget.ts';
import { toHex } from './codec.ts';
import { EngineError, abortable, fromStorage } from './errors.ts';
import { packName } from './pack.ts';
import type { WorkerPool } from './pool.ts';
import type { Repository } from './repository.ts';
import type { SmallFile } from './restore-write.ts';
import { RunReader } from './run-reader.ts';
import type { RunRead } from './run-reader.ts';
import { ObjectNotFoundError } from './storage/errors.ts';

/**
 * The read side shared by restore and verify: finds a blob in the index, reads it from its pack
 * (a ranged read), and has a worker decrypt, decompress and check it against its keyed hash.
 * Bytes in flight are bounded by a shared budget.
 */
export class ChunkReader {
  private readonly repo: Repository;
  private readonly pool: WorkerPool;
  private readonly signal: AbortSignal | undefined;
  private refreshed: Promise<void> | null = null;
  private readonly runs: RunReader;
  readonly budget: Budget;

  /** Every wait ends with CANCELLED once `signal` aborts. */
  constructor(repo: Repository, pool: WorkerPool, signal?: AbortSignal, budgetBytes = 32 * 1024 * 1024) {
    this.repo = repo;
    this.pool = pool;
    this.signal = signal;
    this.budget = new Budget(budgetBytes, signal);
    this.runs = new RunReader(pool, (range) => loadRange(repo, range), (loc) => this.read(loc), signal);
  }

  /** A data blob's location when the index has it now (no promise made); else see `locate`. */
  find(id: Uint8Array): BlobLocation | undefined {
    return this.repo.index.find(id, 'data');
  }

  async locate(id: Uint8Array, type: BlobType = 'data'): Promise<BlobLocation> {
    return abortable(
      locate(this.repo, id, type, () => (this.refreshed ??= this.repo.refreshIndex())),
      this.signal,
    );
  }

  /** Whether the storage takes `expect` (object storage reads ahead; a local one does not). */
  get expects(): boolean {
    return this.repo.backend.expect !== undefined;
  }

  /** Tells the storage which data blobs will be read, in the order they will be (those not in the index yet are left out). */
  expect(ids: readonly Uint8Array[]): void {
    const expect = this.repo.backend.expect?.bind(this.repo.backend);
    if (!expect) return;
    for (const id of ids) {
      const loc = this.repo.index.find(id, 'data');
      if (loc) expect(packName(loc.pack), loc.offset, loc.length);
    }
  }

  /**
   * The plaintext of a small data blob, checked, read together with the other small blobs asked
   * for at the same time (see run-reader.ts): a view of a shared buffer, never to be released.
   */
  readSmall(loc: BlobLocation): Promise<Uint8Array> {
    return this.runs.read(loc);
  }

  /** Like readSmall, but a worker writes the restore's small file with the plaintext: null once written (see RunReader.read). */
  writeSmall(loc: BlobLocation, file: SmallFile): Promise<Uint8Array | null> {
    return this.runs.read(loc, file);
  }

  /** Like writeSmall, settling `read` itself (see RunReader.submit). */
  submitSmall(read: RunRead): void {
    this.runs.submit(read);
  }

  /** The plaintext of a data blob, checked. */
  async read(loc: BlobLocation): Promise<Uint8Array> {
    const { at, stored } = await abortable(loadStored(this.repo, loc), this.signal);
    return this.pool.decode({ id: at.id, encrypted: at.encrypted, comp: at.comp, rawLength: at.rawLength }, stored);
  }

  /** A data blob, checked, written by a worker at `position` of the file open as `fd` (see WorkerPool.decodeTo). */
  async readTo(loc: BlobLocation, fd: number, position: number): Promise<void> {
    const { at, stored } = await abortable(loadStored(this.repo, loc), this.signal);
    await this.pool.decodeTo({ id: at.id, encrypted: at.encrypted, comp: at.comp, rawLength: at.rawLength }, stored, { fd, position });
  }

  /** Resolves once no worker of the pool can still be writing (the pool is closed: call only when the operation is ending). */
  workersStopped(): Promise<void> {
    return this.pool.stopped();
  }
}

/** Finds a blob in the index; once, loads index files written since the repository was opened. */
export async function locate(repo: Repository, id: Uint8Array, type: BlobType, refresh: () => Promise<void>): Promise<BlobLocation> {
  let loc = repo.index.find(id, type);
  if (!loc) {
    await refresh();
    loc = repo.index.find(id, type);
  }
  if (!loc) throw new EngineError('CORRUPT_DATA', `${type} blob ${toHex(id)} is not in the repository index`, { chunk: toHex(id) });
  return loc;
}

/**
 * The stored bytes of a blob (a ranged read of its pack), with the storage's failures in the
 * engine's terms. When the pack is gone, a prune moved the blob since the index was loaded: the
 * index is loaded again and the blob read where it is now (`at` says where it was read).
 */
export async function loadStored(repo: Repository, loc: BlobLocation): Promise<{ at: BlobLocation; stored: Uint8Array }> {
  try {
    return { at: loc, stored: await repo.backend.load(packName(loc.pack), { offset: loc.offset, length: loc.length }) };
  } catch (err) {
    const moved = err instanceof ObjectNotFoundError ? await relocated(repo, loc) : undefined;
    if (moved) return loadStored(repo, moved);
    throw packFailure(err, loc.pack);
  }
}

/** A range of a pack as stored, with the storage's failures in the engine's terms (no relocation: see RunReader). */
export async function loadRange(repo: Repository, range: { pack: string; offset: number; length: number }): Promise<Uint8Array> {
  try {
    return await repo.backend.load(packName(range.pack), { offset: range.offset, length: range.length });
  } catch (err) {
    throw packFailure(err, range.pack);
  }
}

/** Where a blob whose pack is gone is now, once the index is loaded again; undefined when it has not moved. */
export async function relocated(repo: Repository, loc: BlobLocation): Promise<BlobLocation | undefined> {
  await repo.refreshIndex();
  const now = repo.index.find(loc.id, loc.type);
  return now && now.pack !== loc.pack ? now : undefined;
}

export function packFailure(err: unknown, pack: string): unknown {
  if (err instanceof ObjectNotFoundError) return new EngineError('CORRUPT_DATA', `pack ${pack} is missing`, { pack, missing: true });
  if (err instanceof RangeError) return new EngineError('CORRUPT_DATA', `pack ${pack} is shorter than its index says`, { pack });
  return fromStorage(err);
}

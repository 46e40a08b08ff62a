import type { BlobLocation, BlobType } from './blob-table.ts';
import { Budget } from './budget.ts';
import { toHex } from './codec.ts';
import { EngineError, abortable, fromStorage } from './errors.ts';
import { packName } from './pack.ts';
import type { WorkerPool } from './pool.ts';
import type { Repository } from './repository.ts';
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
  readonly budget: Budget;

  /** Every wait ends with CANCELLED once `signal` aborts. */
  constructor(repo: Repository, pool: WorkerPool, signal?: AbortSignal, budgetBytes = 32 * 1024 * 1024) {
    this.repo = repo;
    this.pool = pool;
    this.signal = signal;
    this.budget = new Budget(budgetBytes, signal);
  }

  async locate(id: Uint8Array, type: BlobType = 'data'): Promise<BlobLocation> {
    return abortable(
      locate(this.repo, id, type, () => (this.refreshed ??= this.repo.refreshIndex())),
      this.signal,
    );
  }

  /** The plaintext of a data blob, checked. */
  async read(loc: BlobLocation): Promise<Uint8Array> {
    const stored = await abortable(loadStored(this.repo, loc), this.signal);
    return this.pool.decode({ id: loc.id, encrypted: loc.encrypted, comp: loc.comp, rawLength: loc.rawLength }, stored);
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

/** The stored bytes of a blob (a ranged read of its pack), with the storage's failures in the engine's terms. */
export async function loadStored(repo: Repository, loc: BlobLocation): Promise<Uint8Array> {
  try {
    return await repo.backend.load(packName(loc.pack), { offset: loc.offset, length: loc.length });
  } catch (err) {
    throw packFailure(err, loc.pack);
  }
}

export function packFailure(err: unknown, pack: string): unknown {
  if (err instanceof ObjectNotFoundError) return new EngineError('CORRUPT_DATA', `pack ${pack} is missing`, { pack });
  if (err instanceof RangeError) return new EngineError('CORRUPT_DATA', `pack ${pack} is shorter than its index says`, { pack });
  return fromStorage(err);
}

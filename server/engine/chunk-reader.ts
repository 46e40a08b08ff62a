import { Budget } from './budget.ts';
import { EngineError } from './errors.ts';
import type { BlobLocation } from './master-index.ts';
import { packName } from './pack.ts';
import type { Repository } from './repository.ts';
import { ObjectNotFoundError } from './storage/errors.ts';

/**
 * The read side shared by restore and verify: finds a chunk in the index, reads it from its
 * pack (a ranged read), and has a worker decrypt, decompress and
 * check it against its keyed hash. Bytes in flight are bounded by a shared budget.
 */
export class ChunkReader {
  private readonly repo: Repository;
  private refreshed: Promise<void> | null = null;
  readonly budget: Budget;

  constructor(repo: Repository, budgetBytes = 32 * 1024 * 1024) {
    this.repo = repo;
    this.budget = new Budget(budgetBytes);
  }

  async locate(id: string): Promise<BlobLocation> {
    let loc = this.repo.index.find(id);
    if (!loc) {
      // Written by another writer since this repository was opened: load the new index files once.
      this.refreshed ??= this.repo.refreshIndex();
      await this.refreshed;
      loc = this.repo.index.find(id);
    }
    if (!loc) throw new EngineError('CORRUPT_DATA', `chunk ${id} is not in the repository index`, { chunk: id });
    return loc;
  }

  /** The plaintext of a chunk, checked. */
  async read(loc: BlobLocation): Promise<Uint8Array> {
    let stored: Uint8Array;
    try {
      stored = await this.repo.backend.load(packName(loc.pack), { offset: loc.offset, length: loc.length });
    } catch (err) {
      if (err instanceof ObjectNotFoundError) throw new EngineError('CORRUPT_DATA', `pack ${loc.pack} is missing`, { pack: loc.pack });
      if (err instanceof RangeError) throw new EngineError('CORRUPT_DATA', `pack ${loc.pack} is shorter than its index says`, { pack: loc.pack });
      throw err;
    }
    return this.repo.pool.decode(this.repo.keyRef, { id: loc.id, encrypted: loc.encrypted, comp: loc.comp, rawLength: loc.rawLength }, stored);
  }

  async close(): Promise<void> {}
}

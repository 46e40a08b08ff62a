import { Budget } from './budget.ts';
import { EngineError, errnoCode } from './errors.ts';
import type { BlobLocation } from './master-index.ts';
import { packName } from './pack.ts';
import type { Repository } from './repository.ts';
import type { RangeReader } from './storage/backend.ts';

/**
 * The read side shared by restore and verify: finds a chunk in the index, reads it from its
 * pack (pack files kept open in a small cache), and has a worker decrypt, decompress and
 * check it against its keyed hash. Bytes in flight are bounded by a shared budget.
 */
const OPEN_PACKS = 32;

export class ChunkReader {
  private readonly repo: Repository;
  private readonly readers = new Map<string, OpenPack>();
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

  private reader(pack: string): OpenPack {
    let r = this.readers.get(pack);
    if (r) {
      this.readers.delete(pack); // re-insert: most recently used last
      this.readers.set(pack, r);
      return r;
    }
    const opened = this.repo.backend.openRead(packName(pack)).catch((err: unknown) => {
      this.readers.delete(pack);
      if (errnoCode(err) === 'ENOENT') throw new EngineError('CORRUPT_DATA', `pack ${pack} is missing`, { pack });
      throw err;
    });
    r = { reader: opened, users: 0, evicted: false };
    this.readers.set(pack, r);
    if (this.readers.size > OPEN_PACKS) {
      const [oldest, old] = this.readers.entries().next().value!;
      this.readers.delete(oldest);
      old.evicted = true;
      if (old.users === 0) closeQuietly(old);
    }
    return r;
  }

  /** The plaintext of a chunk, checked. */
  async read(loc: BlobLocation): Promise<Uint8Array> {
    const open = this.reader(loc.pack);
    open.users++;
    let stored: Uint8Array;
    try {
      stored = await (await open.reader).read(loc.offset, loc.length);
    } finally {
      open.users--;
      if (open.evicted && open.users === 0) closeQuietly(open);
    }
    return this.repo.pool.decode(this.repo.keyRef, { id: loc.id, encrypted: loc.encrypted, comp: loc.comp, rawLength: loc.rawLength }, stored);
  }

  async close(): Promise<void> {
    const all = [...this.readers.values()];
    this.readers.clear();
    await Promise.allSettled(all.map(async (r) => (await r.reader).close()));
  }
}

interface OpenPack {
  reader: Promise<RangeReader>;
  users: number;
  evicted: boolean;
}

function closeQuietly(p: OpenPack): void {
  void p.reader.then((x) => x.close()).catch(() => {});
}

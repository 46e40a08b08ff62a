/**
 * Values read from the store, kept between reads, with one invalidation rule: a version number the
 * database moves (by trigger, whoever writes) is read at most once per `seenWithinMs`, a new
 * version empties the cache, and no read is answered from the cache when the last version read
 * began longer ago than `seenWithinMs`. So a change committed by any writer (another instance, a
 * command, an operator's SQL) is no longer answered from the cache `seenWithinMs` after its commit.
 * While the version is being read again, reads go to the store and are not kept; a load under way
 * while the cache is emptied is not kept either, nor loads that answer undefined or values `keep`
 * refuses.
 */
export class VersionedCache<V> {
  private readonly readVersion: () => Promise<number>;
  private readonly seenWithinMs: number;
  private readonly size: number;
  private readonly accept: (value: V) => boolean;
  private readonly now: () => number;
  private readonly entries = new Map<string, V>();
  private version: number | null = null;
  /** When the last completed version read began. */
  private checkedAt = -Infinity;
  private checking: Promise<void> | null = null;
  /** Moves each time the entries are dropped; a load begun under an older one is not kept. */
  private generation = 0;

  constructor(options: { readVersion: () => Promise<number>; seenWithinMs: number; size: number; keep?: (value: V) => boolean; now?: () => number }) {
    this.readVersion = options.readVersion;
    this.seenWithinMs = options.seenWithinMs;
    this.size = options.size;
    this.accept = options.keep ?? (() => true);
    this.now = options.now ?? Date.now;
  }

  /** The cached value when the cache is known current, without waiting; otherwise undefined. */
  peek(key: string): V | undefined {
    return this.now() - this.checkedAt < this.seenWithinMs ? this.entries.get(key) : undefined;
  }

  /**
   * Before loading what peek did not have: a ticket for keeping what the load reads, or null when
   * the cache is not known current (a version read starts, and the load is kept by no one).
   */
  ticket(): number | null {
    if (this.now() - this.checkedAt < this.seenWithinMs) return this.generation;
    this.check().catch(() => {}); // a failed read leaves the cache unused; the next ticket tries again
    return null;
  }

  /** Keeps a loaded value, unless the cache was emptied since its ticket was taken. */
  keep(key: string, value: V | undefined, ticket: number | null): void {
    if (value === undefined || ticket !== this.generation || !this.accept(value)) return;
    if (this.entries.size >= this.size) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, value);
  }

  async get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const cached = this.peek(key);
    if (cached !== undefined) return cached;
    const ticket = this.ticket();
    const value = await load();
    this.keep(key, value, ticket);
    return value;
  }

  /** Drops everything, and whatever a load under way would add: for a change this process just made. */
  drop(): void {
    this.entries.clear();
    this.generation++;
  }

  /** One version read at a time. */
  private check(): Promise<void> {
    this.checking ??= (async () => {
      const began = this.now();
      try {
        const version = await this.readVersion();
        if (version !== this.version) {
          this.drop();
          this.version = version;
        }
        this.checkedAt = began;
      } finally {
        this.checking = null;
      }
    })();
    return this.checking;
  }
}

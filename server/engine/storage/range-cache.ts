/**
 * Small ranged reads served from aligned windows of their object, each window fetched once
 * (concurrent readers share the fetch) and kept in a small LRU cache. For object stores, where a
 * request costs far more than its bytes: a restore of many small files then reads a pack in a
 * few requests instead of one per file (restic's restorer reads whole packs for the same reason).
 * Safe because the engine never changes an object once written (packs are named by their
 * content); a save or remove through the backend drops that object's windows all the same.
 * Every read gets its own copy: callers may transfer or release what they receive.
 */
export interface RangeCacheOptions {
  /** Size of a window, aligned on multiples of itself. */
  windowBytes: number;
  /** Windows kept, in bytes. */
  maxBytes: number;
  /** Longer ranges are not served from windows (they are read as asked). */
  maxRange: number;
}

/**
 * A window holds a whole data pack (16 MiB, plus its last blob of up to 4 MiB and its header), so
 * a restore reads each pack in one request, as restic does; three are kept, since a restore's
 * parallel reads straddle two packs at a time (with two kept, they evict each other).
 */
export const DEFAULT_RANGE_CACHE: RangeCacheOptions = { windowBytes: 24 * 2 ** 20, maxBytes: 72 * 2 ** 20, maxRange: 2 ** 20 };

/** Reads up to `length` bytes of `name` from `offset` (fewer at the object's end). */
export type FetchUpTo = (name: string, offset: number, length: number) => Promise<Uint8Array>;

export class RangeCache {
  private readonly fetch: FetchUpTo;
  private readonly options: RangeCacheOptions;
  /** name + window start → its bytes; Map order is recency (oldest first). */
  private readonly windows = new Map<string, { name: string; bytes: Promise<Uint8Array>; size: number }>();
  private held = 0;

  constructor(fetch: FetchUpTo, options: RangeCacheOptions = DEFAULT_RANGE_CACHE) {
    this.fetch = fetch;
    this.options = options;
  }

  /** Whether a range of this length is read through windows. */
  serves(length: number): boolean {
    return length > 0 && length <= this.options.maxRange;
  }

  /** Exactly `length` bytes from `offset`, else a RangeError (the object is shorter). */
  async read(name: string, offset: number, length: number): Promise<Uint8Array> {
    const size = this.options.windowBytes;
    const out = new Uint8Array(length);
    for (let start = Math.floor(offset / size) * size; start < offset + length; start += size) {
      const window = await this.window(name, start);
      const from = Math.max(offset, start);
      const to = Math.min(offset + length, start + window.length);
      if (to <= from || (to < offset + length && window.length < size)) throw new RangeError(`${name} holds fewer than ${offset + length} bytes`);
      out.set(window.subarray(from - start, to - start), from - offset);
    }
    return out;
  }

  /** Forgets the windows of an object (it was written or removed). */
  drop(name: string): void {
    for (const [key, entry] of this.windows) {
      if (entry.name === name) {
        this.windows.delete(key);
        this.held -= entry.size;
      }
    }
  }

  private window(name: string, start: number): Promise<Uint8Array> {
    const key = `${start}:${name}`;
    const cached = this.windows.get(key);
    if (cached) {
      this.windows.delete(key); // most recent last
      this.windows.set(key, cached);
      return cached.bytes;
    }
    const entry = { name, size: this.options.windowBytes, bytes: this.fetch(name, start, this.options.windowBytes) };
    this.windows.set(key, entry);
    this.held += entry.size;
    entry.bytes.then(
      (bytes) => {
        if (this.windows.get(key) !== entry) return;
        this.held += bytes.length - entry.size;
        entry.size = bytes.length;
      },
      () => {
        // A failed fetch is not kept: the next read asks the store again.
        if (this.windows.get(key) === entry) {
          this.windows.delete(key);
          this.held -= entry.size;
        }
      },
    );
    for (const [oldest, e] of this.windows) {
      if (this.held <= this.options.maxBytes || oldest === key) break;
      this.windows.delete(oldest);
      this.held -= e.size;
    }
    return entry.bytes;
  }
}

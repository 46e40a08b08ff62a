/**
 * Ranged reads served from aligned windows of their object, each window fetched once (concurrent
 * readers share the fetch) and kept in a small LRU cache. For object stores, where a request
 * costs far more than its bytes: a restore reads a pack in one request instead of one per blob
 * (restic's restorer reads whole packs for the same reason). A window is filled as its bytes
 * arrive, and a read is answered as soon as its own bytes are in: the first blobs of a pack are
 * decoded while the rest of it is still on the way.
 * Safe because the engine never changes an object once written (packs are named by their
 * content); a save or remove through the backend drops that object's windows all the same.
 * Every read gets its own copy: callers may transfer or release what they receive.
 * A reader that knows what it will read tells it first (`expect`): the windows are then fetched
 * ahead of the reads, in the order the reads will come (restic's restorer downloads several packs
 * at once for the same reason: a pack's request is then no longer waited for between two packs).
 */
export interface RangeCacheOptions {
  /** Size of a window, aligned on multiples of itself. */
  windowBytes: number;
  /** Windows kept, in bytes. */
  maxBytes: number;
  /** Longer ranges are not served from windows (they are read as asked). */
  maxRange: number;
  /** Windows fetched ahead of the reads, when the reads were announced (`expect`), within `maxBytes`. */
  ahead?: number;
  /** Of a window dropped with announced reads still to come, their bytes are kept, up to this many in all. */
  keptBytes?: number;
}

/**
 * The windows for data packs that close at `packBytes`: a window holds a whole pack (plus its
 * last blob, of up to 4 MiB, and its header: 8 MiB more), so a restore reads each pack in one
 * request, as restic does, small blobs and large alike (a large file's chunks read on their own
 * beside the window of their pack downloaded its bytes twice). Five windows' worth: a restore
 * writing small files reads from about three packs at once, and the two after them are fetched
 * meanwhile; with three, nothing was fetched ahead until those were left, and a large file
 * written next waited on each of its packs (a second of a ten-second restore of the real tree).
 * Up to four are fetched ahead (restic downloads five packs at once). Packs hold less than their
 * window once their size is known. A pack larger than its window is read through two windows:
 * any pack size is read.
 */
export function rangeCacheFor(packBytes: number): RangeCacheOptions {
  const windowBytes = packBytes + 8 * 2 ** 20;
  return { windowBytes, maxBytes: 5 * windowBytes, maxRange: windowBytes, ahead: 4, keptBytes: 16 * 2 ** 20 };
}

/** A window's key: its size, its start and its object. */
function windowKey(name: string, start: number, size: number): string {
  return `${size}:${start}:${name}`;
}

/** How many windows before the furthest one read are still taken as being read (a restore reads from a few packs at once). */
const BEHIND = 3;

/** Buffers of dropped windows kept for the next ones (each up to a pack resident). */
const SPARE_WINDOWS = 1;

/** Announced ranges of a dropped window this close together are kept as one (a restore reads nearby small blobs in one run). */
const KEPT_GAP = 64 * 1024;

/** Bytes of a dropped window that announced reads still need, and how many reads of each range start are still to come. */
interface Kept {
  start: number;
  bytes: Uint8Array;
  left: Map<number, number>;
}

/** Where a fetch hands its bytes, in order: `size` once, before any bytes, with how many will come. */
export interface FetchSink {
  size(bytes: number): void;
  data(chunk: Uint8Array): void;
}

/** Reads up to `length` bytes of `name` from `offset` (fewer at the object's end) into `sink`; resolves once all are handed over. */
export type FetchInto = (name: string, offset: number, length: number, sink: FetchSink) => Promise<void>;

/** One window: its bytes as they arrive, and the reads waiting for them. */
class Window {
  readonly name: string;
  readonly start: number;
  /** Bytes counted against the cache: the window's size until the store says how much comes. */
  held: number;
  private bytes: Uint8Array | null = null;
  private receivedBytes = 0;
  /** Whether the fetch has ended (all bytes in, or failed). */
  done = false;
  /** Bytes handed to readers so far: a window mostly read is the first to go. */
  served = 0;
  failure: { err: unknown } | null = null;
  private waiters: { end: number; resolve: (bytes: Uint8Array) => void; reject: (err: unknown) => void }[] = [];
  readonly finished: Promise<void>;

  /** `sized` is told how many bytes the window holds, once the store has said. */
  constructor(
    name: string,
    start: number,
    held: number,
    fetch: (sink: FetchSink) => Promise<void>,
    sized: (window: Window, bytes: number) => void,
    allocate: (bytes: number) => Uint8Array,
  ) {
    this.name = name;
    this.start = start;
    this.held = held;
    this.finished = fetch({
      size: (bytes) => {
        this.bytes = allocate(bytes);
        sized(this, bytes);
      },
      data: (chunk) => {
        this.bytes!.set(chunk, this.receivedBytes);
        this.receivedBytes += chunk.length;
        this.wake();
      },
    }).then(
      () => {
        this.done = true;
        this.wake();
      },
      (err: unknown) => {
        this.done = true;
        this.failure = { err };
        this.wake();
      },
    );
  }

  /** The buffer its bytes are received into (null before the store said how many come). */
  get buffer(): ArrayBuffer | null {
    return (this.bytes?.buffer as ArrayBuffer | undefined) ?? null;
  }

  /** The bytes in so far. */
  get received(): Uint8Array {
    return (this.bytes ?? new Uint8Array(0)).subarray(0, this.receivedBytes);
  }

  /** The window's bytes once its first `end` are in (or all it will ever hold, if fewer). */
  until(end: number): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.waiters.push({ end, resolve, reject });
      this.wake();
    });
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) {
      if (this.failure) w.reject(this.failure.err);
      else if (this.receivedBytes >= w.end || this.done) w.resolve(this.received);
      else this.waiters.push(w);
    }
  }
}

export class RangeCache {
  private readonly fetch: FetchInto;
  private readonly options: RangeCacheOptions;
  /** window size + start + name → its window; Map order is recency (oldest first). */
  private readonly windows = new Map<string, Window>();
  private held = 0;
  /** Windows fetched and dropped since (cleared now and then, to stay small). */
  private readonly dropped = new Set<string>();
  /** The windows announced reads will need, in the order of their first read; `planned` maps a window's key to its place. */
  private readonly plan: { key: string; name: string; start: number }[] = [];
  private readonly planned = new Map<string, number>();
  /** Per planned window: the announced reads not made yet, by start: their length and how many. */
  private readonly pending = new Map<string, Map<number, { length: number; count: number }>>();
  /** The furthest place in the plan reads have reached. */
  private reached = -1;
  /** No window planned before this place has announced reads to come. */
  private first = 0;
  private pumping = false;
  /** By object: ranges of dropped windows kept for announced reads (`keptBytes`), and their bytes in all. */
  private readonly kept = new Map<string, Kept[]>();
  private keptHeld = 0;
  /** Buffers of dropped windows, each a window's size, for the next windows (see `allocate`). */
  private readonly spare: ArrayBuffer[] = [];

  constructor(fetch: FetchInto, options: RangeCacheOptions) {
    this.fetch = fetch;
    this.options = options;
  }

  /**
   * Exactly `length` bytes from `offset`, else a RangeError (the object is shorter); null when
   * the range is not read through windows: when it is too long, or when the windows it needs were
   * fetched once and dropped since, small ones too. A read that comes back to a dropped window is
   * most often a stray one (a blob shared with a file restored long before): when it was
   * announced, its bytes were kept as the window was dropped (up to `keptBytes`); else it is read
   * from a window an eighth the size (the shared blobs of a duplicated directory lie together),
   * and when that one was dropped too, on its own.
   */
  read(name: string, offset: number, length: number): Promise<Uint8Array> | null {
    if (length <= 0 || length > this.options.maxRange) return null;
    const kept = this.fromKept(name, offset, length);
    if (kept) return Promise.resolve(kept);
    const size = [this.options.windowBytes, this.options.windowBytes / 8].find((size) => this.usable(name, offset, length, size));
    return size === undefined ? null : this.readFrom(name, offset, length, size);
  }

  /**
   * Announces a read of `length` bytes from `offset`, to come after those announced before: the
   * windows it needs are fetched ahead (up to `ahead` beyond the furthest window read so far, and
   * only while the windows with announced reads still to come fit within the budget: a window is
   * never fetched ahead at the cost of one still needed). Only a hint: a read
   * never announced is served all the same, and an announced one never made costs a window's
   * fetch at most.
   */
  expect(name: string, offset: number, length: number): void {
    if (length <= 0 || length > this.options.maxRange || !this.options.ahead) return;
    const size = this.options.windowBytes;
    for (let start = Math.floor(offset / size) * size; start < offset + length; start += size) {
      const key = windowKey(name, start, size);
      let pending = this.pending.get(key);
      if (!pending) this.pending.set(key, (pending = new Map()));
      const known = pending.get(offset);
      if (known) known.count++;
      else pending.set(offset, { length, count: 1 });
      if (this.planned.has(key)) continue;
      this.planned.set(key, this.plan.length);
      this.plan.push({ key, name, start });
    }
    this.pump();
  }

  /** Starts the fetches of the next planned windows that are due and fit. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      const size = this.options.windowBytes;
      const last = Math.min(this.plan.length - 1, this.reached + (this.options.ahead ?? 0));
      while (this.first < last && !this.pending.has(this.plan[this.first]!.key)) this.first++;
      for (let i = this.first; i <= last; i++) {
        const { key, name, start } = this.plan[i]!;
        if (this.windows.has(key) || this.dropped.has(key)) continue;
        if (!this.pending.has(key)) continue;
        if (this.neededHeld() + size > this.options.maxBytes) return;
        this.window(name, start, size);
      }
    } finally {
      this.pumping = false;
    }
  }

  /**
   * Bytes of the windows still needed: being fetched, or with announced reads to come and not
   * left far behind (the reads still to come in a window the restore has long passed are of
   * blobs shared with files restored later: they may be read from a smaller window again).
   */
  private neededHeld(): number {
    let held = 0;
    for (const [key, w] of this.windows) if (!w.done || this.needed(key)) held += w.held;
    return held;
  }

  private needed(key: string): boolean {
    return this.pending.has(key) && (this.planned.get(key) ?? -1) >= this.reached - BEHIND;
  }

  /** Counts the announced reads whose ranges start within this read as made. */
  private consume(key: string, offset: number, length: number): void {
    const pending = this.pending.get(key);
    if (!pending) return;
    // A single blob is looked up; a longer read (a run of blobs) looks through the window's starts.
    const take = (at: number, p: { count: number }) => (--p.count === 0 ? pending.delete(at) : true);
    const exact = pending.get(offset);
    if (exact) take(offset, exact);
    if (exact?.length !== length) {
      for (const [at, p] of pending) if (at > offset && at < offset + length) take(at, p);
    }
    if (pending.size === 0) this.pending.delete(key);
  }

  /** Whether no window of this size that the range needs was dropped (and not fetched again). */
  private usable(name: string, offset: number, length: number, size: number): boolean {
    for (let start = Math.floor(offset / size) * size; start < offset + length; start += size) {
      const key = windowKey(name, start, size);
      if (!this.windows.has(key) && this.dropped.has(key)) return false;
    }
    return true;
  }

  private async readFrom(name: string, offset: number, length: number, size: number): Promise<Uint8Array> {
    const out = new Uint8Array(length);
    for (let start = Math.floor(offset / size) * size; start < offset + length; start += size) {
      const from = Math.max(offset, start);
      const to = Math.min(offset + length, start + size);
      const w = this.window(name, start, size);
      w.served += to - from;
      const key = windowKey(name, start, size);
      this.consume(key, from, to - from);
      const place = this.planned.get(key);
      if (place !== undefined && place > this.reached) {
        this.reached = place;
        this.pump();
      }
      const window = await w.until(to - start);
      if (window.length < to - start) throw new RangeError(`${name} holds fewer than ${offset + length} bytes`);
      out.set(window.subarray(from - start, to - start), from - offset);
    }
    return out;
  }

  /** Forgets the windows of an object (it was written or removed). */
  drop(name: string): void {
    for (const [key, window] of this.windows) {
      if (window.name === name) this.forget(key, window);
    }
    for (const key of this.dropped) {
      if (key.slice(key.indexOf(':', key.indexOf(':') + 1) + 1) === name) this.dropped.delete(key);
    }
    for (const k of this.kept.get(name) ?? []) this.keptHeld -= k.bytes.length;
    this.kept.delete(name);
  }

  /**
   * Keeps the bytes of a window being dropped that announced reads still need (blobs shared with
   * files restored later: restic writes such a blob into every file when its pack comes; here its
   * bytes wait for their reads), nearby ranges as one, while they fit in `keptBytes`.
   */
  private keep(key: string, window: Window): void {
    const pending = this.pending.get(key);
    const budget = this.options.keptBytes ?? 0;
    if (!pending || budget === 0 || window.failure) return;
    const bytes = window.received;
    const groups: { from: number; to: number; left: Map<number, number> }[] = [];
    for (const [at, { length, count }] of [...pending].sort((a, b) => a[0] - b[0])) {
      const last = groups.at(-1);
      if (last && at <= last.to + KEPT_GAP) {
        last.to = Math.max(last.to, at + length);
        last.left.set(at, count);
      } else groups.push({ from: at, to: at + length, left: new Map([[at, count]]) });
    }
    for (const g of groups) {
      if (g.from < window.start || g.to - window.start > bytes.length || this.keptHeld + g.to - g.from > budget) continue;
      let list = this.kept.get(window.name);
      if (!list) this.kept.set(window.name, (list = []));
      list.push({ start: g.from, bytes: bytes.slice(g.from - window.start, g.to - window.start), left: g.left });
      this.keptHeld += g.to - g.from;
    }
  }

  /** A copy of the range from the kept bytes, if they hold it; counts the announced reads within it as made. */
  private fromKept(name: string, offset: number, length: number): Uint8Array | null {
    const list = this.kept.get(name);
    const i = list?.findIndex((k) => k.start <= offset && offset + length <= k.start + k.bytes.length) ?? -1;
    if (!list || i < 0) return null;
    const k = list[i]!;
    const out = k.bytes.slice(offset - k.start, offset - k.start + length);
    for (const [at, n] of k.left) {
      if (at < offset || at >= offset + length) continue;
      if (n > 1) k.left.set(at, n - 1);
      else k.left.delete(at);
    }
    if (k.left.size === 0) {
      list.splice(i, 1);
      this.keptHeld -= k.bytes.length;
      if (list.length === 0) this.kept.delete(name);
    }
    const size = this.options.windowBytes;
    const start = Math.floor(offset / size) * size;
    if (offset + length <= start + size) this.consume(windowKey(name, start, size), offset, length);
    return out;
  }

  private forget(key: string, window: Window, evicted = false): void {
    if (this.windows.get(key) !== window) return;
    if (evicted) {
      if (this.dropped.size >= 65536) this.dropped.clear();
      this.dropped.add(key);
      this.keep(key, window);
    }
    this.windows.delete(key);
    this.held -= window.held;
    this.recycle(window);
  }

  /**
   * A window's buffer: a dropped window's when one is spare, else a new one of a full window's
   * size when most of one is coming (its pages past `bytes` are never touched, so never
   * resident). Each new buffer of a pack's size was zeroed and faulted in page by page, then
   * left to the collector, whose external-memory accounting it pushed toward a full collection.
   */
  private allocate(bytes: number): Uint8Array {
    const size = this.options.windowBytes;
    const i = this.spare.findIndex((b) => b.byteLength >= bytes);
    if (i >= 0) return new Uint8Array(this.spare.splice(i, 1)[0]!, 0, bytes);
    return bytes > size / 2 && bytes <= size ? new Uint8Array(new ArrayBuffer(size), 0, bytes) : new Uint8Array(bytes);
  }

  /**
   * Keeps the buffer of a window fetched in full for a later one, once the reads it answered
   * have copied their bytes out (each copies as soon as it is answered, within the same turn of
   * the event loop). A window still being fetched is not reused: bytes may still come into it.
   */
  private recycle(window: Window): void {
    const buffer = window.buffer;
    if (!window.done || !buffer || buffer.byteLength !== this.options.windowBytes) return;
    setImmediate(() => {
      if (this.spare.length < SPARE_WINDOWS) this.spare.push(buffer);
    });
  }

  private window(name: string, start: number, size: number): Window {
    const key = windowKey(name, start, size);
    const cached = this.windows.get(key);
    if (cached) {
      this.windows.delete(key); // most recent last
      this.windows.set(key, cached);
      return cached;
    }
    const window = new Window(
      name,
      start,
      size,
      (sink) => this.fetch(name, start, size, sink),
      (w, bytes) => {
        if (this.windows.get(key) === w) this.held += bytes - w.held;
        w.held = bytes;
      },
      (bytes) => this.allocate(bytes),
    );
    this.windows.set(key, window);
    this.held += window.held;
    // A failed fetch is not kept: the next read asks the store again.
    void window.finished.then(() => {
      if (window.failure) this.forget(key, window);
      this.evict();
      this.pump();
    });
    this.evict();
    return window;
  }

  /**
   * Brings the windows kept within their budget: those mostly read go first (the rest of their
   * pack is least likely to be asked for), then the least recently used. A window still being
   * fetched is never dropped: reads are waiting for it, and would only fetch it again.
   */
  private evict(): void {
    // Windows no announced read still needs go first, then those the reads have left behind.
    const score = ([key, w]: [string, Window]) =>
      w.served / Math.max(1, w.held) + ((this.planned.get(key) ?? -1) < this.reached ? 1 : 0) + (this.needed(key) ? 0 : 2);
    while (this.held > this.options.maxBytes) {
      let victim: [string, Window] | null = null;
      for (const entry of this.windows) {
        if (entry[1].done && (!victim || score(entry) > score(victim))) victim = entry;
      }
      if (!victim) return;
      this.forget(victim[0], victim[1], true);
    }
  }
}

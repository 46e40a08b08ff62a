/**
 * The storage a repository lives on. Object names are '/'-separated paths relative to the
 * repository root ("config", "keys/<id>", "data/ab/<id>", "index/<id>", "snapshots/<id>").
 * Every write is atomic and durable once the promise resolves: a reader sees the whole
 * object or nothing.
 */
export interface RangeReader {
  read(offset: number, length: number): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** An object written piece by piece (a pack file), visible under its name only after commit. */
export interface ObjectWriter {
  /** Writes bytes at an offset; writes may run concurrently and finish in any order. */
  write(parts: Uint8Array[], offset: number): Promise<void>;
  /** Makes the object durable and visible under its name (atomically). */
  commit(): Promise<void>;
  /** Drops what was written; the name never appears. */
  abort(): Promise<void>;
}

export interface Backend {
  /** Starts an object that is written in pieces (large objects without holding them in memory). */
  createWriter(name: string): Promise<ObjectWriter>;
  /** Writes (or replaces) an object from its parts, atomically and durably. */
  put(name: string, parts: Uint8Array[]): Promise<void>;
  /** Like put, but only when no object of that name exists; resolves false otherwise. */
  create(name: string, parts: Uint8Array[]): Promise<boolean>;
  get(name: string): Promise<Uint8Array>;
  openRead(name: string): Promise<RangeReader>;
  /** Names of every complete object under a prefix ("index", "data"), recursively. */
  list(prefix: string): Promise<string[]>;
  size(name: string): Promise<number | null>;
  delete(name: string): Promise<void>;
}

/**
 * The storage a repository lives on, with object-store semantics so that a local directory and an
 * S3 bucket are interchangeable: objects are written whole (never modified at an offset), read
 * whole or by range, listed by prefix, and removed. Names are '/'-separated paths relative to the
 * repository root ("config", "data/ab/<id>", "index/<id>", "snapshots/<id>"); no segment is
 * empty, "." or "..".
 *
 * Every implementation passes the one conformance suite in `suite.ts`.
 */
export interface ObjectInfo {
  name: string;
  size: number;
  /** When the object was written (object stores: Last-Modified). */
  modified: Date;
}

/**
 * How a backup packs blobs for a storage: the size at which a data pack is closed, and how many
 * bytes of packs may be held in memory, not yet written out. A storage whose ObjectWriter keeps a
 * pack until it is sealed holds the packs being filled and being saved: its budget must take at
 * least a data pack and a tree pack being filled (a smaller one is raised to that). One that
 * writes packs as they fill (`writesAsFilled`: a local directory) holds a slab per open pack and
 * the writes under way. Pack sizes are not part of the format: readers, prune and check take
 * packs of any size.
 */
export interface Packing {
  dataPackBytes: number;
  unwrittenBytes: number;
  /** The storage's ObjectWriter writes each part out as it comes (else it keeps them until the commit). */
  writesAsFilled?: boolean;
}

/**
 * Packing for a storage that names none (a local directory names LOCAL_PACKING): 16 MiB data packs; the packs being
 * filled plus about three being saved (an object store takes up to a second or more per pack
 * under load, while large files fill one in a fraction of that: with two, a backup to S3 waited
 * about 2 s of 28 for uploads).
 */
export const DEFAULT_PACKING: Packing = { dataPackBytes: 16 * 2 ** 20, unwrittenBytes: 64 * 2 ** 20 };

export interface Backend {
  /** Where the repository lives, for logs and messages ("/var/lib/…", "s3://bucket/prefix/"); holds no secret. */
  readonly location: string;
  /** Optional: how backups to this storage pack blobs (else `DEFAULT_PACKING`); a store paying per request asks for larger packs. */
  readonly packing?: Packing;
  /**
   * Writes a whole object from its parts, atomically and durably: once the promise resolves the
   * object is there in full, and no reader ever sees part of it. With `ifAbsent`, an existing
   * object of that name is never replaced and the call resolves false; otherwise it resolves true.
   */
  save(name: string, parts: readonly Uint8Array[], options?: { ifAbsent?: boolean }): Promise<boolean>;
  /** The whole object, or `length` bytes from `offset`: exactly that many, else a RangeError. */
  load(name: string, range?: { offset: number; length: number }): Promise<Uint8Array>;
  stat(name: string): Promise<ObjectInfo>;
  /** Every complete object whose name starts with `prefix` ("data/", "index/"), in no particular order. */
  list(prefix: string): AsyncIterable<ObjectInfo>;
  /** Removes an object; removing one that does not exist is not an error. */
  remove(name: string): Promise<void>;
  /**
   * Starts an object written piece by piece and named only at the end (a pack: named by the
   * hash of its bytes). A local directory appends each piece to a temp file as it comes; an
   * object store keeps the pieces and saves the whole object at the commit (`bufferedObject`).
   * Nothing of it is visible under any name before the commit.
   */
  create(): ObjectWriter;
  /**
   * Optional, a hint: `length` bytes of `name` from `offset` will be read, after the ranges
   * announced before. A store where each request costs much (S3) fetches ahead in that order.
   */
  expect?(name: string, offset: number, length: number): void;
  /**
   * Optional: removes what interrupted saves left behind (a local directory's temp files) last
   * written before `olderThan`, and tells how much. Object stores leave it out: an unfinished
   * upload never becomes an object.
   */
  removeUnfinished?(olderThan: Date): Promise<{ count: number; bytes: number }>;
}

/**
 * An object being written (`Backend.create`). Every writer ends with `commit` or `abort`.
 */
export interface ObjectWriter {
  /**
   * Appends `part`. Resolves once the writer holds the part no more, so the caller may reuse or
   * free it: when written out, or, for a writer that saves whole objects, at the commit or abort.
   * Resolves even when the write failed: the commit reports the failure.
   */
  write(part: Uint8Array): Promise<void>;
  /**
   * Makes the bytes written the object `name` (replacing one of that name), atomically and
   * durably as `save` does; once the promise resolves every write has too. After a failed commit
   * nothing is left under either name (call `abort` all the same).
   */
  commit(name: string): Promise<void>;
  /** Drops what was written (a temp file is removed); nothing becomes visible. Never rejects. */
  abort(): Promise<void>;
}

/** An ObjectWriter for a store that writes whole objects: keeps the parts and saves them at the commit. */
export function bufferedObject(save: (name: string, parts: readonly Uint8Array[]) => Promise<unknown>): ObjectWriter {
  let parts: Uint8Array[] = [];
  let done = false;
  let settle!: () => void;
  const released = new Promise<void>((resolve) => (settle = resolve));
  const end = (): void => {
    done = true;
    parts = [];
    settle();
  };
  return {
    write(part) {
      if (done) return Promise.resolve();
      parts.push(part);
      return released;
    },
    async commit(name) {
      if (done) throw new Error('the object was already committed or aborted');
      try {
        await save(name, parts);
      } finally {
        end();
      }
    },
    async abort() {
      end();
    },
  };
}

/** Collects a listing (small prefixes only: index/, snapshots/, keys/). */
export async function listAll(backend: Backend, prefix: string): Promise<ObjectInfo[]> {
  const out: ObjectInfo[] = [];
  for await (const info of backend.list(prefix)) out.push(info);
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Throws on a name that is not a clean relative path. */
export function checkName(name: string): void {
  if (name === '' || name.split('/').some((p) => p === '' || p === '.' || p === '..') || name.includes('\0')) {
    throw new TypeError(`bad object name ${JSON.stringify(name)}`);
  }
}

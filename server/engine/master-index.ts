import { BlobTable } from './blob-table.ts';
import type { BlobLocation, BlobType } from './blob-table.ts';
import { ByteReader, ByteWriter, fromHex } from './codec.ts';
import type { MasterKey } from './crypto.ts';
import { randomId } from './crypto.ts';
import { EngineError } from './errors.ts';
import { decodeAnyMeta, encodeBinaryMeta } from './meta.ts';
import { readBlobList, writeBlobList } from './pack.ts';
import { release } from './release.ts';
import type { FinishedPack } from './pack.ts';
import type { Backend } from './storage/backend.ts';
import type { CompressionCode } from './types.ts';

/**
 * Where every stored blob lives. Index files (index/<random id>) are written by each backup for
 * the packs it has finished and never rewritten, so concurrent writers do not conflict. They are
 * loaded into one compact BlobTable (see blob-table.ts for its cost per blob).
 *
 * Index file, format 2 (binary meta): u8 2 | varint packs | per pack: id (32) | blob list (pack.ts).
 * Format 1 (JSON meta, read only): { packs: [{ id, blobs: [[id, encrypted, comp, offset, length, rawLength]] }] },
 * every blob a data blob.
 */
const INDEX_VERSION = 2;
/**
 * An index file takes at least this many bytes per blob (its id, random and so incompressible,
 * a flags byte and three varints; about 41 in practice): its size bounds the blobs it lists.
 */
const INDEX_BYTES_PER_BLOB = 36;
const LOAD_CONCURRENCY = 8;
/**
 * The index's full ids kept in memory (131,072 blobs' worth), the rest in a temp file: read back
 * one id per lookup, they cost an incremental backup of 20,000 unchanged files a system call per
 * file on its busiest thread.
 */
export const INDEX_IDS_IN_MEMORY = 4 * 1024 * 1024;

type V1Row = [id: string, encrypted: 0 | 1, comp: CompressionCode, offset: number, length: number, rawLength: number];

export class MasterIndex {
  private current = new BlobTable(1024, { idsInMemory: INDEX_IDS_IN_MEMORY });
  private loaded = new Set<string>();

  /**
   * The blobs of the index files loaded. A reload (after a prune removed index files) puts a new
   * table here; whoever holds the previous one keeps a consistent, older view.
   */
  get table(): BlobTable {
    return this.current;
  }

  /** The index files loaded. */
  get files(): ReadonlySet<string> {
    return this.loaded;
  }

  has(id: Uint8Array, type: BlobType, encrypted: boolean): boolean {
    return this.current.has(id, type, encrypted);
  }

  /**
   * Any stored copy of the blob, preferring the encrypted one, for a reader that checks what it
   * reads against the id (see BlobTable.findToRead): the location holds the id asked for.
   */
  find(id: Uint8Array, type: BlobType): BlobLocation | undefined {
    const slot = this.current.findToRead(id, type);
    return slot < 0 ? undefined : this.current.location(slot, id);
  }

  get size(): number {
    return this.current.size;
  }

  /**
   * Loads the index files not seen yet (but those in `skip`). When a file loaded before is gone
   * (a prune replaced it), the whole index is loaded again into a new table, so blobs a prune
   * removed are never taken as stored.
   */
  async refresh(backend: Backend, key: MasterKey, skip?: ReadonlySet<string>): Promise<void> {
    const listed = new Map<string, number>();
    for await (const { name, size } of backend.list('index/')) if (!skip?.has(name)) listed.set(name, size);
    let table = this.current;
    let loaded = this.loaded;
    if ([...loaded].some((name) => !listed.has(name))) {
      table = new BlobTable(1024, { idsInMemory: INDEX_IDS_IN_MEMORY });
      loaded = new Set();
    }
    const names = [...listed.keys()].filter((name) => !loaded.has(name));
    table.reserve(Math.ceil(names.reduce((n, name) => n + listed.get(name)!, 0) / INDEX_BYTES_PER_BLOB));
    let next = 0;
    const loader = async (): Promise<void> => {
      while (next < names.length) {
        const name = names[next++]!;
        addIndexFile(table, key, name, await backend.load(name));
        loaded.add(name);
      }
    };
    await Promise.all(Array.from({ length: LOAD_CONCURRENCY }, loader));
    this.current = table;
    this.loaded = loaded;
  }

  /** Writes an index file for finished packs and adds them here; returns its size. */
  async write(backend: Backend, key: MasterKey, packs: readonly FinishedPack[]): Promise<number> {
    const { name, size } = await writeIndexFile(backend, key, packs);
    this.loaded.add(name);
    for (const p of packs) {
      const pack = this.current.packNumber(p.id);
      for (const b of p.blobs) this.current.add(b.id, b.type, b.encrypted, b.comp, pack, b.offset, b.length, b.rawLength);
    }
    return size;
  }
}

/** Adds the blobs an index file (format 1 or 2) lists to `table`; CORRUPT_DATA when it cannot be read. */
export function addIndexFile(table: BlobTable, key: MasterKey, name: string, data: Uint8Array): void {
  const meta = decodeAnyMeta(key, 'index', data, name);
  if ('json' in meta) {
    for (const p of (meta.json as { packs: { id: string; blobs: V1Row[] }[] }).packs) {
      const pack = table.packNumber(fromHex(p.id));
      for (const [id, enc, comp, offset, length, raw] of p.blobs) table.add(fromHex(id), 'data', enc === 1, comp, pack, offset, length, raw);
    }
  } else {
    const r = new ByteReader(meta.binary, name);
    if (r.u8() !== INDEX_VERSION) throw new EngineError('CORRUPT_DATA', `${name}: unknown index version`, { object: name });
    const packs = r.varint();
    for (let i = 0; i < packs; i++) {
      const pack = table.packNumber(r.raw(32));
      readBlobList(r, name, (id, type, encrypted, comp, offset, length, rawLength) => table.add(id, type, encrypted, comp, pack, offset, length, rawLength));
    }
    release(meta.binary); // the decompressed index, freed now rather than at the next collection
  }
}

/** Writes one index file (format 2) listing `packs`, under a new random name. */
export async function writeIndexFile(backend: Backend, key: MasterKey, packs: readonly FinishedPack[]): Promise<{ name: string; size: number }> {
  const w = new ByteWriter();
  w.u8(INDEX_VERSION);
  w.varint(packs.length);
  for (const p of packs) {
    w.raw(p.id);
    writeBlobList(w, p.type, p.blobs);
  }
  const data = encodeBinaryMeta(key, 'index', w.finish());
  const name = `index/${randomId()}`;
  await backend.save(name, [data]);
  return { name, size: data.length };
}

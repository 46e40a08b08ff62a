import type { MasterKey } from './crypto.ts';
import { randomId } from './crypto.ts';
import { decodeMeta, encodeMeta } from './meta.ts';
import { fromRow, toRow } from './pack.ts';
import type { BlobRow, PackedBlob } from './pack.ts';
import { listAll, type Backend } from './storage/backend.ts';

/**
 * Where every stored blob lives. Index files (index/<random id>) are written by each backup
 * for the packs it has finished, never rewritten, so concurrent writers do not conflict.
 * A blob is looked up by id and by whether its stored copy is encrypted: a plaintext copy
 * never satisfies an encrypted backup.
 */
export interface BlobLocation extends PackedBlob {
  pack: string;
}

interface IndexFileJson {
  packs: { id: string; blobs: BlobRow[] }[];
}

function dedupKey(id: string, encrypted: boolean): string {
  return encrypted ? `${id}e` : `${id}p`;
}

export class MasterIndex {
  private readonly blobs = new Map<string, BlobLocation>();
  private readonly loaded = new Set<string>();

  add(pack: string, blob: PackedBlob): void {
    const key = dedupKey(blob.id, blob.encrypted);
    if (!this.blobs.has(key)) this.blobs.set(key, { ...blob, pack });
  }

  has(id: string, encrypted: boolean): boolean {
    return this.blobs.has(dedupKey(id, encrypted));
  }

  /** Any stored copy of the chunk, preferring the encrypted one. */
  find(id: string): BlobLocation | undefined {
    return this.blobs.get(dedupKey(id, true)) ?? this.blobs.get(dedupKey(id, false));
  }

  all(): IterableIterator<BlobLocation> {
    return this.blobs.values();
  }

  get size(): number {
    return this.blobs.size;
  }

  /** Loads the index files not seen yet. */
  async refresh(backend: Backend, key: MasterKey): Promise<void> {
    const names = (await listAll(backend, 'index/')).map((o) => o.name).filter((n) => !this.loaded.has(n));
    const files = await Promise.all(names.map(async (n) => [n, await backend.load(n)] as const));
    for (const [name, data] of files) {
      const json = decodeMeta<IndexFileJson>(key, 'index', data, name);
      for (const p of json.packs) for (const row of p.blobs) this.add(p.id, fromRow(row));
      this.loaded.add(name);
    }
  }

  /** Writes an index file for finished packs and records it as loaded; returns its size. */
  async write(backend: Backend, key: MasterKey, packs: { id: string; blobs: PackedBlob[] }[]): Promise<number> {
    const json: IndexFileJson = { packs: packs.map((p) => ({ id: p.id, blobs: p.blobs.map(toRow) })) };
    const data = encodeMeta(key, 'index', json);
    const name = `index/${randomId()}`;
    await backend.save(name, [data]);
    this.loaded.add(name);
    for (const p of packs) for (const b of p.blobs) this.add(p.id, b);
    return data.length;
  }
}

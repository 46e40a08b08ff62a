import { createHash } from 'node:crypto';
import { decodeBlob } from './blob.ts';
import type { BlobTable, BlobType } from './blob-table.ts';
import { fromHex } from './codec.ts';
import { EngineError, abortable } from './errors.ts';
import { writeIndexFile } from './master-index.ts';
import { PACK_BLOBS, PackWriter, TREE_PACK_SIZE, packName } from './pack.ts';
import { DEFAULT_PACKING } from './storage/backend.ts';
import type { FinishedPack, PackedBlob } from './pack.ts';
import type { PrunePlan } from './prune-plan.ts';
import type { Repository } from './repository.ts';

/**
 * The writing half of a prune: copies the used blobs of the packs to repack into new packs (their
 * stored bytes as they are: nothing is decrypted or compressed again), then writes index files
 * that list every used blob of the kept and new packs. New data packs close at the size the
 * storage asks for, as a backup's do. Nothing is deleted here, so whatever
 * happens the repository holds every blob at least once and every index entry points into an
 * existing pack.
 *
 * A pack is read whole and checked against its name (the SHA-256 of its bytes) before a blob is
 * copied; when that fails (a format-1 pack, or damage), each blob to copy is authenticated
 * instead, and a damaged one stops the prune (CORRUPT_DATA) before anything is deleted.
 */
const INDEX_BLOBS = 65536;

export interface RepackResult {
  indexFiles: string[];
  packsWritten: number;
  bytesWritten: number;
}

export async function repackAndIndex(repo: Repository, table: BlobTable, plan: PrunePlan, signal: AbortSignal | undefined, onPack: () => void): Promise<RepackResult> {
  const result: RepackResult = { indexFiles: [], packsWritten: 0, bytesWritten: 0 };
  const written: FinishedPack[] = [];
  for (const type of ['tree', 'data'] as const) {
    let writer: PackWriter | null = null;
    const limit = type === 'tree' ? TREE_PACK_SIZE : (repo.backend.packing ?? DEFAULT_PACKING).dataPackBytes;
    const close = async (): Promise<void> => {
      if (!writer) return;
      const finished = await abortable(writer.finish(repo.key), signal);
      writer = null;
      written.push(finished);
      result.packsWritten++;
      result.bytesWritten += finished.size;
    };
    try {
      for (const n of plan.repack) {
        if (plan.packType(n) !== type) continue;
        const id = table.packId(n);
        const data = await abortable(repo.backend.load(packName(id)), signal);
        const slots = plan.liveSlots.subarray(plan.from[n], plan.from[n + 1]);
        const intact = createHash('sha256').update(data).digest('hex') === id;
        for (const slot of slots) {
          const loc = table.location(slot);
          const stored = data.subarray(loc.offset, loc.offset + loc.length);
          if (!intact) {
            try {
              if (stored.length !== loc.length) throw new Error('short');
              decodeBlob(repo.blobKeys, loc, stored);
            } catch {
              throw new EngineError('CORRUPT_DATA', `pack ${id} holds a damaged blob that a snapshot uses; nothing was deleted (run a check)`, { pack: id });
            }
          }
          writer ??= new PackWriter(repo.backend, type);
          writer.add({ id: loc.id, data: stored.slice(), comp: loc.comp, rawLength: loc.rawLength }, loc.encrypted);
          if (writer.size >= limit || writer.blobs.count >= PACK_BLOBS) await close();
        }
        onPack();
      }
      await close();
    } catch (err) {
      await (writer as PackWriter | null)?.abort(); // its temp file, if the storage writes one, is removed
      throw err;
    }
  }

  let batch: FinishedPack[] = [];
  let blobs = 0;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const { name, size } = await abortable(writeIndexFile(repo.backend, repo.key, batch), signal);
    result.indexFiles.push(name);
    result.bytesWritten += size;
    batch = [];
    blobs = 0;
  };
  const add = async (pack: FinishedPack): Promise<void> => {
    batch.push(pack);
    blobs += pack.blobs.count;
    if (blobs >= INDEX_BLOBS) await flush();
  };
  for (const n of plan.keep) await add(keptPack(table, plan, n));
  for (const pack of written) await add(pack);
  await flush();
  return result;
}

/** A kept pack as an index file lists it: its used blobs, read from the table as they are written out. */
function keptPack(table: BlobTable, plan: PrunePlan, n: number): FinishedPack {
  const slots = plan.liveSlots.subarray(plan.from[n], plan.from[n + 1]);
  const type: BlobType = plan.packType(n);
  return {
    id: fromHex(table.packId(n)),
    type,
    size: 0,
    blobs: {
      count: slots.length,
      *[Symbol.iterator](): Generator<PackedBlob> {
        for (const slot of slots) yield table.location(slot);
      },
    },
  };
}

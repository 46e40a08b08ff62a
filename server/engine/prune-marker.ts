import { BlobTable } from './blob-table.ts';
import type { BlobType } from './blob-table.ts';
import { ByteReader, ByteWriter } from './codec.ts';
import { randomId } from './crypto.ts';
import { EngineError, fromStorage } from './errors.ts';
import { decodeAnyMeta, encodeBinaryMeta } from './meta.ts';
import type { Repository } from './repository.ts';
import { listAll } from './storage/backend.ts';
import { ObjectNotFoundError } from './storage/errors.ts';

/**
 * A prune marker, prune/<random id>, lists the blobs a prune may delete (its candidates: stored,
 * referenced by no snapshot when it looked). A backup that starts while a marker exists never
 * reuses one of them: it stores such data again. The marker is removed when the prune ends.
 *
 * Binary meta: u8 1 | varint n | n × (id (32) | u8 flags: 1 encrypted, 2 tree).
 */
const MARKER_VERSION = 1;

export interface BlobKey {
  id: Uint8Array;
  type: BlobType;
  encrypted: boolean;
}

/** The blobs a backup must not reuse: a set, or every blob when a marker cannot be read. */
export type Avoid = BlobTable | 'all';

export async function writeMarker(repo: Repository, keys: Iterable<BlobKey>, count: number): Promise<string> {
  const w = new ByteWriter(16 + count * 33);
  w.u8(MARKER_VERSION);
  w.varint(count);
  let written = 0;
  for (const k of keys) {
    w.raw(k.id);
    w.u8((k.encrypted ? 1 : 0) | (k.type === 'tree' ? 2 : 0));
    written++;
  }
  if (written !== count) throw new Error(`marker: ${written} keys, ${count} announced`);
  const name = `prune/${randomId()}`;
  try {
    await repo.backend.save(name, [encodeBinaryMeta(repo.key, 'prune-marker', w.finish())]);
  } catch (err) {
    throw fromStorage(err);
  }
  return name;
}

export async function listMarkers(repo: Repository): Promise<string[]> {
  try {
    return (await listAll(repo.backend, 'prune/')).map((o) => o.name);
  } catch (err) {
    throw fromStorage(err);
  }
}

/**
 * The candidates of every prune marker in the repository. A marker that cannot be read makes
 * the answer 'all' (reuse nothing): a backup then stores everything again, which is always safe.
 */
export async function readAvoid(repo: Repository): Promise<Avoid> {
  const avoid = new BlobTable(256);
  for (const name of await listMarkers(repo)) {
    let data: Uint8Array;
    try {
      data = await repo.backend.load(name);
    } catch (err) {
      if (err instanceof ObjectNotFoundError) continue; // its prune ended meanwhile
      throw fromStorage(err);
    }
    try {
      const meta = decodeAnyMeta(repo.key, 'prune-marker', data, name);
      if (!('binary' in meta)) return 'all';
      const r = new ByteReader(meta.binary, name);
      if (r.u8() !== MARKER_VERSION) return 'all';
      for (let n = r.varint(); n > 0; n--) {
        const id = r.raw(32);
        const flags = r.u8();
        avoid.add(id, flags & 2 ? 'tree' : 'data', (flags & 1) !== 0, 0, 0, 0, 0, 0);
      }
    } catch (err) {
      if (err instanceof EngineError) return 'all';
      throw err;
    }
  }
  return avoid;
}

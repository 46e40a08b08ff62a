import { randomBytes } from 'node:crypto';
import { blobKeys } from './blob.ts';
import { Chunker, DEFAULT_CHUNKER, gearTable } from './chunker.ts';
import type { ChunkerParams } from './chunker.ts';
import type { BlobKeys, MasterKey } from './crypto.ts';
import { EngineError, fromStorage } from './errors.ts';
import { fromV1Header } from './legacy.ts';
import { MasterIndex } from './master-index.ts';
import { decodeMeta, encodeMeta } from './meta.ts';
import { SNAPSHOT_ID } from './snapshot.ts';
import type { SnapshotHeader } from './snapshot.ts';
import type { Backend } from './storage/backend.ts';
import { ObjectNotFoundError } from './storage/errors.ts';

/**
 * One repository on a storage backend, opened with its key: config, the index of stored blobs,
 * snapshot headers. Layout (format 2): config, data/ (packs), index/, snapshots/. A format-1
 * repository also holds keys/ and trees/; it is read as it is, and new backups into it are
 * written in format 2 (see the engine README).
 */
interface ConfigJson {
  version: 1 | 2;
  id: string;
  chunker: ChunkerParams;
  gearSeed: string;
  created: string;
}

export const FORMAT_VERSION = 2;
/** Snapshot headers kept decoded (they never change); a bound, so memory does not grow with their number. */
const HEADER_CACHE = 4096;

export class Repository {
  readonly backend: Backend;
  readonly key: MasterKey;
  /** The key imported once for this thread's own blob work (tree encoding and decoding). */
  readonly blobKeys: BlobKeys;
  readonly id: string;
  /** The config's format version: 2, or 1 for a repository created by 1.0.0. */
  readonly version: 1 | 2;
  readonly chunker: Chunker;
  readonly index = new MasterIndex();
  private closed = false;
  private readonly headers = new Map<string, SnapshotHeader>();
  private refreshing: Promise<void> | null = null;
  private nextRefresh: Promise<void> | null = null;

  private constructor(backend: Backend, key: MasterKey, config: ConfigJson) {
    this.backend = backend;
    this.key = key;
    this.blobKeys = blobKeys(key);
    this.id = config.id;
    this.version = config.version;
    this.chunker = new Chunker(gearTable(Buffer.from(config.gearSeed, 'base64')), config.chunker);
  }

  /**
   * Opens the repository on `backend` with its key, initialising an empty backend (the config is
   * created only if absent, so two first opens agree). NOT_A_REPOSITORY when the backend holds
   * other objects but no config; WRONG_KEY when the key does not open the config.
   */
  static async open(backend: Backend, key: MasterKey): Promise<Repository> {
    try {
      let data = await loadIfPresent(backend, 'config');
      if (!data) {
        for await (const other of backend.list('')) {
          throw new EngineError('NOT_A_REPOSITORY', `${backend.location} holds objects but no repository`, { location: backend.location, object: other.name });
        }
        const config: ConfigJson = {
          version: FORMAT_VERSION,
          id: randomBytes(32).toString('hex'),
          chunker: DEFAULT_CHUNKER,
          gearSeed: randomBytes(32).toString('base64'),
          created: new Date().toISOString(),
        };
        const encoded = encodeMeta(key, 'config', config);
        if (await backend.save('config', [encoded], { ifAbsent: true })) data = encoded;
        else data = await backend.load('config'); // another opener created it first
      }
      let config: ConfigJson;
      try {
        config = decodeMeta<ConfigJson>(key, 'config', data, 'config');
      } catch {
        throw new EngineError('WRONG_KEY', 'the key does not open this repository (or its config is damaged)', { location: backend.location });
      }
      if (config.version !== 1 && config.version !== 2) {
        throw new EngineError('UNSUPPORTED_FORMAT', `repository format ${String(config.version)} is newer than this engine reads`, { version: config.version });
      }
      const repo = new Repository(backend, key, config);
      await repo.refreshIndex();
      return repo;
    } catch (err) {
      throw fromStorage(err);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  assertOpen(): void {
    if (this.closed) throw new EngineError('REPOSITORY_CLOSED', 'the repository is closed');
  }

  /**
   * Loads index files written since (by this or another writer), or the whole index again when
   * a prune replaced some. Calls made while one runs share the next one (each caller gets a
   * refresh that started after its call).
   */
  refreshIndex(): Promise<void> {
    if (!this.refreshing) {
      this.refreshing = this.index.refresh(this.backend, this.key).catch((err: unknown) => {
        throw fromStorage(err);
      });
      void this.refreshing.finally(() => (this.refreshing = null)).catch(() => {});
      return this.refreshing;
    }
    this.nextRefresh ??= this.refreshing.catch(() => {}).then(() => {
      this.nextRefresh = null;
      return this.refreshIndex();
    });
    return this.nextRefresh;
  }

  /** Saves a snapshot header (the commit point of a backup); returns its size. */
  async saveSnapshot(header: SnapshotHeader): Promise<number> {
    const data = encodeMeta(this.key, 'snapshot', header);
    await this.backend.save(`snapshots/${header.id}`, [data]);
    this.remember(header);
    return data.length;
  }

  /** Every snapshot, oldest first (headers only). */
  async snapshots(): Promise<SnapshotHeader[]> {
    const out: SnapshotHeader[] = [];
    try {
      for await (const { name } of this.backend.list('snapshots/')) {
        const id = name.slice('snapshots/'.length);
        if (!SNAPSHOT_ID.test(id)) continue;
        // Forgotten between the listing and the read: not a snapshot any more.
        const header = await this.snapshot(id).catch((err: unknown) => {
          if (err instanceof EngineError && err.code === 'SNAPSHOT_NOT_FOUND') return null;
          throw err;
        });
        if (header) out.push(header);
      }
    } catch (err) {
      throw fromStorage(err);
    }
    return out.sort((a, b) => a.time.localeCompare(b.time) || a.id.localeCompare(b.id));
  }

  async snapshot(id: string): Promise<SnapshotHeader> {
    const cached = this.headers.get(id);
    if (cached) return cached;
    const missing = new EngineError('SNAPSHOT_NOT_FOUND', `no snapshot ${id}`, { snapshotId: id });
    if (!SNAPSHOT_ID.test(id)) throw missing;
    const data = await loadIfPresent(this.backend, `snapshots/${id}`).catch((err: unknown) => {
      throw fromStorage(err);
    });
    if (!data) throw missing;
    const raw = decodeMeta<{ version: number }>(this.key, 'snapshot', data, `snapshots/${id}`);
    const header = raw.version === 1 ? fromV1Header(raw as Parameters<typeof fromV1Header>[0]) : (raw as SnapshotHeader);
    if (header.id !== id) throw new EngineError('CORRUPT_DATA', `snapshots/${id} names another snapshot`, { object: `snapshots/${id}` });
    this.remember(header);
    return header;
  }

  /** Drops a forgotten snapshot's header from the cache. */
  forgetHeader(id: string): void {
    this.headers.delete(id);
  }

  private remember(header: SnapshotHeader): void {
    if (this.headers.size >= HEADER_CACHE) this.headers.clear();
    this.headers.set(header.id, header);
  }
}

async function loadIfPresent(backend: Backend, name: string): Promise<Uint8Array | null> {
  try {
    return await backend.load(name);
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return null;
    throw err;
  }
}

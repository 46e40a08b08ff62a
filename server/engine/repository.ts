import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Chunker, DEFAULT_CHUNKER, gearTable } from './chunker.ts';
import type { ChunkerParams } from './chunker.ts';
import type { MasterKey } from './crypto.ts';
import { EngineError, errnoCode } from './errors.ts';
import { newMasterKey, unlock, writeKey } from './keys.ts';
import type { Secret } from './keys.ts';
import { MasterIndex } from './master-index.ts';
import { decodeMeta, encodeMeta } from './meta.ts';
import { sharedPool } from './pool.ts';
import type { WorkerPool } from './pool.ts';
import { SNAPSHOT_ID } from './snapshot.ts';
import type { SnapshotHeader, TreeEntry } from './snapshot.ts';
import { LocalBackend } from './storage/local.ts';
import { listAll, type Backend } from './storage/backend.ts';
import { ObjectNotFoundError } from './storage/errors.ts';

/**
 * One repository: its storage, unlocked master key, chunker, and the index of stored blobs.
 * Layout: config, keys/, data/ (packs), index/, trees/, snapshots/.
 */
interface ConfigJson {
  version: 1;
  id: string;
  chunker: ChunkerParams;
  gearSeed: string;
  created: string;
}

const LAYOUT = new Set(['config', 'keys', 'data', 'index', 'trees', 'snapshots']);
const opening = new Map<string, Promise<unknown>>();

/** Opens of one directory in this process run one at a time, so two first opens do not both initialise. */
async function serialized<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const previous = opening.get(dir) ?? Promise.resolve();
  const run = previous.catch(() => {}).then(fn);
  opening.set(dir, run);
  try {
    return await run;
  } finally {
    if (opening.get(dir) === run) opening.delete(dir);
  }
}

export class Repository {
  readonly dir: string;
  readonly backend: Backend;
  readonly key: MasterKey;
  readonly id: string;
  readonly chunker: Chunker;
  readonly index = new MasterIndex();
  readonly pool: WorkerPool;
  readonly keyRef: number;
  private closed = false;
  private readonly headers = new Map<string, SnapshotHeader>();

  private constructor(dir: string, backend: Backend, key: MasterKey, config: ConfigJson) {
    this.dir = dir;
    this.backend = backend;
    this.key = key;
    this.id = config.id;
    this.chunker = new Chunker(gearTable(Buffer.from(config.gearSeed, 'base64')), config.chunker);
    this.pool = sharedPool();
    this.keyRef = this.pool.registerKey(key);
  }

  /** Opens the repository in `dir`, creating it when the directory is missing or empty. */
  static async open(dir: string, secret: Secret): Promise<Repository> {
    const root = resolve(dir);
    const backend = new LocalBackend(root);
    const repo = await serialized(root, async () => {
      if (!(await exists(backend, 'config'))) {
        const created = await initialise(root, backend, secret);
        if (created) return new Repository(root, backend, created.key, created.config);
      }
      const key = await unlock(backend, secret);
      const config = decodeMeta<ConfigJson>(key, 'config', await backend.load('config'), 'config');
      return new Repository(root, backend, key, config);
    });
    await repo.index.refresh(repo.backend, repo.key);
    return repo;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.pool.forgetKey(this.keyRef);
  }

  assertOpen(): void {
    if (this.closed) throw new EngineError('REPOSITORY_CLOSED', 'the repository is closed');
  }

  async refreshIndex(): Promise<void> {
    await this.index.refresh(this.backend, this.key);
  }

  async saveMeta(name: string, kind: 'snapshot' | 'tree' | 'index', value: unknown): Promise<number> {
    const data = encodeMeta(this.key, kind, value);
    await this.backend.save(name, [data]);
    return data.length;
  }

  async snapshots(): Promise<SnapshotHeader[]> {
    const out: SnapshotHeader[] = [];
    for (const { name } of await listAll(this.backend, 'snapshots/')) {
      const id = name.slice('snapshots/'.length);
      out.push(await this.snapshot(id));
    }
    return out.sort((a, b) => a.time.localeCompare(b.time));
  }

  async snapshot(id: string): Promise<SnapshotHeader> {
    const cached = this.headers.get(id);
    if (cached) return cached;
    if (!SNAPSHOT_ID.test(id)) throw new EngineError('SNAPSHOT_NOT_FOUND', `no snapshot ${id}`, { snapshotId: id });
    let data: Uint8Array;
    try {
      data = await this.backend.load(`snapshots/${id}`);
    } catch (err) {
      if (err instanceof ObjectNotFoundError) throw new EngineError('SNAPSHOT_NOT_FOUND', `no snapshot ${id}`, { snapshotId: id });
      throw err;
    }
    const header = decodeMeta<SnapshotHeader>(this.key, 'snapshot', data, `snapshots/${id}`);
    this.headers.set(id, header);
    return header;
  }

  async tree(id: string): Promise<TreeEntry[]> {
    await this.snapshot(id);
    return decodeMeta<TreeEntry[]>(this.key, 'tree', await this.backend.load(`trees/${id}`), `trees/${id}`);
  }
}

async function initialise(root: string, backend: Backend, secret: Secret): Promise<{ key: MasterKey; config: ConfigJson } | null> {
  let names: string[] = [];
  try {
    names = await readdir(root);
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
  const foreign = names.filter((n) => !n.startsWith('.') && !LAYOUT.has(n));
  if (foreign.length > 0 || (await listAll(backend, 'snapshots/')).length > 0) {
    throw new EngineError('NOT_A_REPOSITORY', `${root} is not empty and holds no repository`, { path: root });
  }
  const key = newMasterKey();
  const config: ConfigJson = {
    version: 1,
    id: randomBytes(32).toString('hex'),
    chunker: DEFAULT_CHUNKER,
    gearSeed: randomBytes(32).toString('base64'),
    created: new Date().toISOString(),
  };
  const keyId = await writeKey(backend, secret, key);
  if (await backend.save('config', [encodeMeta(key, 'config', config)], { ifAbsent: true })) return { key, config };
  await backend.remove(`keys/${keyId}`); // another process initialised it first
  return null;
}

async function exists(backend: Backend, name: string): Promise<boolean> {
  try {
    await backend.stat(name);
    return true;
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return false;
    throw err;
  }
}

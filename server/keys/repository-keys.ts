import { randomBytes } from 'node:crypto';
import type { Store } from '../store/index.ts';
import { unwrapKey, wrapKey } from './master-key.ts';

/** Bytes of a repository key: the engine's encryption and chunk-id keys, 32 bytes each. */
export const REPOSITORY_KEY_BYTES = 64;

/**
 * One random key per account and repository, kept in the Store wrapped by the master key. Neither
 * a repository (or a copy of DATA_DIR) nor the database alone is enough to read a backup: the
 * master key lives apart from both.
 */
export class RepositoryKeys {
  private readonly store: Store;
  private readonly master: Uint8Array;

  constructor(store: Store, master: Uint8Array) {
    this.store = store;
    this.master = master;
  }

  async get(accountId: string, destination: string): Promise<Buffer | undefined> {
    const wrapped = await this.store.keys.repositoryKey(accountId, destination);
    return wrapped && unwrapKey(this.master, wrapped, accountId, destination);
  }

  /** Keeps `key` as the repository's key unless it has one; resolves the one kept. */
  async put(accountId: string, destination: string, key: Uint8Array): Promise<Buffer> {
    const kept = await this.store.keys.insertRepositoryKey({ accountId, destination, wrapped: wrapKey(this.master, key, accountId, destination) });
    return unwrapKey(this.master, kept, accountId, destination);
  }

  /** The repository's key, made on first use (concurrent first uses, on any instance, agree on one). */
  async getOrCreate(accountId: string, destination: string): Promise<Buffer> {
    return (await this.get(accountId, destination)) ?? this.put(accountId, destination, randomBytes(REPOSITORY_KEY_BYTES));
  }
}

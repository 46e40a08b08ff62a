import type { AccountStore, ApiKeyRecord } from '../store/index.ts';
import { VersionedCache } from '../store/versioned-cache.ts';

/**
 * How long after a change to a key or an account is committed (by any instance, or the keys
 * command) every server has stopped answering from what it cached before it: the cache re-reads
 * the store's key version at most this often, and a request never uses a cache whose last check
 * began longer ago than this.
 */
export const KEY_CHANGES_SEEN_WITHIN_MS = 1000;

const SIZE = 10_000;

/**
 * The API keys bearer authentication looks up, kept between requests. Invalidation: the store's
 * key version (AccountStore.keysVersion, moved by a trigger on every change to api_keys or
 * accounts), as VersionedCache reads it. Keys that do not exist are not cached (they have no tokens).
 */
export class KeyCache {
  private readonly accounts: AccountStore;
  private readonly cache: VersionedCache<ApiKeyRecord>;

  constructor(accounts: AccountStore, now: () => number = Date.now) {
    this.accounts = accounts;
    this.cache = new VersionedCache({ readVersion: () => accounts.keysVersion(), seenWithinMs: KEY_CHANGES_SEEN_WITHIN_MS, size: SIZE, now });
  }

  /** The cached key when the cache is known current, without waiting; otherwise undefined (then call get). */
  peek(keyId: string): ApiKeyRecord | undefined {
    return this.cache.peek(keyId);
  }

  get(keyId: string): Promise<ApiKeyRecord | undefined> {
    return this.cache.get(keyId, () => this.accounts.getKey(keyId));
  }
}

import type { AccountStore, ApiKeyRecord } from '../store/index.ts';

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
 * accounts) is read at most once per KEY_CHANGES_SEEN_WITHIN_MS, and a new version empties the
 * cache. A lookup that was under way when the cache was emptied is not kept. Keys that do not
 * exist are not cached (they have no tokens).
 */
export class KeyCache {
  private readonly accounts: AccountStore;
  private readonly now: () => number;
  private readonly entries = new Map<string, ApiKeyRecord>();
  private version: number | null = null;
  /** When the last completed version check began. */
  private checkedAt = -Infinity;
  private checking: Promise<void> | null = null;
  /** Moves each time the entries are dropped; a lookup begun under an older one is not kept. */
  private generation = 0;

  constructor(accounts: AccountStore, now: () => number = Date.now) {
    this.accounts = accounts;
    this.now = now;
  }

  /** The cached key when the cache is known current, without waiting; otherwise undefined (then call get). */
  peek(keyId: string): ApiKeyRecord | undefined {
    return this.now() - this.checkedAt < KEY_CHANGES_SEEN_WITHIN_MS ? this.entries.get(keyId) : undefined;
  }

  async get(keyId: string): Promise<ApiKeyRecord | undefined> {
    if (this.now() - this.checkedAt >= KEY_CHANGES_SEEN_WITHIN_MS) await this.check();
    const cached = this.entries.get(keyId);
    if (cached) return cached;
    const generation = this.generation;
    const key = await this.accounts.getKey(keyId);
    if (key && generation === this.generation) {
      if (this.entries.size >= SIZE) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(keyId, key);
    }
    return key;
  }

  /** One version read at a time; every request that needs it waits for the same one. */
  private check(): Promise<void> {
    this.checking ??= (async () => {
      const began = this.now();
      try {
        const version = await this.accounts.keysVersion();
        if (version !== this.version) {
          this.entries.clear();
          this.generation++;
          this.version = version;
        }
        this.checkedAt = began;
      } finally {
        this.checking = null;
      }
    })();
    return this.checking;
  }
}

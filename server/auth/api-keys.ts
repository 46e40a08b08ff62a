import type { Plan } from '../config.ts';
import { newId } from '../ids.ts';
import type { ApiKeyRecord, Store } from '../store/index.ts';
import { DUMMY_HASH, generateSecret, hashSecret, verifySecret } from './secret-hash.ts';

export interface CreatedKey {
  apiKey: string;
  secret: string;
  accountId: string;
  plan: Plan;
}

/** Creates a key (and a new account unless one is given). The secret is returned once, stored hashed. */
export async function createApiKey(
  store: Store,
  opts: { plan: Plan; accountId?: string; label?: string; apiKey?: string; secret?: string },
): Promise<CreatedKey> {
  const secret = opts.secret ?? generateSecret();
  const secretHash = await hashSecret(secret);
  const apiKey = opts.apiKey ?? newId('key');
  let accountId = opts.accountId;
  if (accountId) {
    const account = store.accounts.getAccount(accountId);
    if (!account) throw new Error(`No account ${accountId}`);
    store.accounts.insertKey({ id: apiKey, accountId, secretHash, label: opts.label ?? null });
    return { apiKey, secret, accountId, plan: account.plan };
  }
  store.db.exec('BEGIN IMMEDIATE');
  try {
    accountId = store.accounts.createAccount(opts.plan).id;
    store.accounts.insertKey({ id: apiKey, accountId, secretHash, label: opts.label ?? null });
    store.db.exec('COMMIT');
  } catch (err) {
    store.db.exec('ROLLBACK');
    throw err;
  }
  return { apiKey, secret, accountId, plan: opts.plan };
}

/**
 * Checks an api_key/secret pair. Unknown, revoked and wrong-secret all answer null after the same
 * scrypt work, so timing does not tell which keys exist.
 */
export async function authenticateKey(store: Store, apiKey: string, secret: string): Promise<ApiKeyRecord | null> {
  const key = store.accounts.getKey(apiKey);
  const ok = await verifySecret(secret, key?.secretHash ?? DUMMY_HASH);
  if (!key || !ok || key.revokedAt) return null;
  return key;
}

export type StartupKeyOutcome =
  | { kind: 'bootstrap'; apiKey: string; created: boolean; revoked: boolean }
  | { kind: 'development'; key: CreatedKey }
  | { kind: 'none' };

/**
 * At start: make sure the bootstrap key exists with the configured secret and plan; or, with no
 * bootstrap and an empty key table, create a development key (the caller prints it once).
 * A bootstrap key revoked with the keys command stays revoked: revocation is deliberate.
 */
export async function ensureStartupKey(
  store: Store,
  bootstrap: { apiKey: string; secret: string; plan: Plan } | null,
): Promise<StartupKeyOutcome> {
  if (bootstrap) {
    const existing = store.accounts.getKey(bootstrap.apiKey);
    if (!existing) {
      await createApiKey(store, { plan: bootstrap.plan, apiKey: bootstrap.apiKey, secret: bootstrap.secret, label: 'bootstrap' });
      return { kind: 'bootstrap', apiKey: bootstrap.apiKey, created: true, revoked: false };
    }
    if (!(await verifySecret(bootstrap.secret, existing.secretHash))) {
      store.accounts.updateKeySecret(existing.id, await hashSecret(bootstrap.secret));
    }
    if (existing.plan !== bootstrap.plan) store.accounts.setPlan(existing.accountId, bootstrap.plan);
    return { kind: 'bootstrap', apiKey: bootstrap.apiKey, created: false, revoked: existing.revokedAt !== null };
  }
  if (store.accounts.countKeys() > 0) return { kind: 'none' };
  const key = await createApiKey(store, { plan: 'free_trial', label: 'development' });
  return { kind: 'development', key };
}

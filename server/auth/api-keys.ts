import type { Plan } from '../config.ts';
import type { ServiceEvents } from '../events.ts';
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
  if (opts.accountId) {
    const account = await store.accounts.getAccount(opts.accountId);
    if (!account) throw new Error(`No account ${opts.accountId}`);
    await store.accounts.insertKey({ id: apiKey, accountId: account.id, secretHash, label: opts.label ?? null });
    return { apiKey, secret, accountId: account.id, plan: account.plan };
  }
  const account = await store.accounts.createAccountWithKey(opts.plan, { id: apiKey, secretHash, label: opts.label ?? null });
  return { apiKey, secret, accountId: account.id, plan: opts.plan };
}

/**
 * Checks an api_key/secret pair. Unknown, revoked and wrong-secret all answer null after the same
 * scrypt work, so timing does not tell which keys exist.
 */
export async function authenticateKey(store: Store, apiKey: string, secret: string): Promise<ApiKeyRecord | null> {
  const key = await store.accounts.getKey(apiKey);
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
    let existing = await store.accounts.getKey(bootstrap.apiKey);
    if (!existing) {
      try {
        await createApiKey(store, { plan: bootstrap.plan, apiKey: bootstrap.apiKey, secret: bootstrap.secret, label: 'bootstrap' });
        return { kind: 'bootstrap', apiKey: bootstrap.apiKey, created: true, revoked: false };
      } catch (err) {
        // Another instance starting at the same moment made it first.
        existing = await store.accounts.getKey(bootstrap.apiKey);
        if (!existing) throw err;
      }
    }
    if (!(await verifySecret(bootstrap.secret, existing.secretHash))) {
      await store.accounts.updateKeySecret(existing.id, await hashSecret(bootstrap.secret));
    }
    if (existing.plan !== bootstrap.plan) await store.accounts.setPlan(existing.accountId, bootstrap.plan);
    return { kind: 'bootstrap', apiKey: bootstrap.apiKey, created: false, revoked: existing.revokedAt !== null };
  }
  if ((await store.accounts.countKeys()) > 0) return { kind: 'none' };
  const key = await createApiKey(store, { plan: 'free_trial', label: 'development' });
  return { kind: 'development', key };
}

/** Reports the key start-up created, if it created one (key.created, for the audit log). */
export async function reportStartupKey(events: ServiceEvents, store: Store, outcome: StartupKeyOutcome): Promise<void> {
  if (outcome.kind === 'development') {
    const { key } = outcome;
    events.emit('key.created', { accountId: key.accountId, keyId: key.apiKey, plan: key.plan, via: 'development' });
  } else if (outcome.kind === 'bootstrap' && outcome.created) {
    const key = await store.accounts.getKey(outcome.apiKey);
    if (key) events.emit('key.created', { accountId: key.accountId, keyId: key.id, plan: key.plan, via: 'bootstrap' });
  }
}

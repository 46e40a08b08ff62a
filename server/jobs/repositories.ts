import { hkdfSync } from 'node:crypto';
import { join } from 'node:path';
import { hasLegacyKeys, masterKeyFromBytes, unlockLegacyKey } from '../engine/index.ts';
import type { MasterKey } from '../engine/index.ts';
import type { Backend } from '../engine/storage/backend.ts';
import { loadOrCreateSecret } from '../secrets.ts';

/** Destinations configured out of the box: both are repositories on local disk under DATA_DIR. */
export const DESTINATIONS = ['cloud', 'local'] as const;
export type Destination = (typeof DESTINATIONS)[number];

export function isDestination(value: string): value is Destination {
  return (DESTINATIONS as readonly string[]).includes(value);
}

/**
 * One repository per account and destination: no two tenants share chunks, so deduplication
 * (and the stored_bytes it reports) can never reveal that another account holds the same data.
 * Account ids and destinations are server-made, never raw client text.
 */
export function repositoryDir(dataDir: string, accountId: string, destination: Destination): string {
  if (!/^[A-Za-z0-9_-]+$/.test(accountId)) throw new Error(`unexpected account id ${accountId}`);
  return join(dataDir, 'repositories', accountId, destination);
}

/** The lock key under which jobs of one repository run one at a time. */
export function repositoryLockKey(accountId: string, destination: string): string {
  return `${accountId}/${destination}`;
}

/** BACKUP_REPOSITORY_PASSWORD, else a random password kept in DATA_DIR/secrets/repository-password. */
export function repositorySecret(dataDir: string, password: string | undefined): { password: string } {
  return { password: password ?? loadOrCreateSecret(dataDir, 'repository-password', 32).toString('base64url') };
}

/**
 * The key of one repository: one written by 1.0.0 keeps its key wrapped in its key files (keys/),
 * opened with the password; a newer one's key is derived from the password, the account and the
 * destination, so no two repositories share a key.
 */
export async function repositoryKey(backend: Backend, secret: { password: string }, accountId: string, destination: Destination): Promise<MasterKey> {
  if (await hasLegacyKeys(backend)) return unlockLegacyKey(backend, secret);
  const bytes = hkdfSync('sha256', Buffer.from(secret.password, 'utf8'), 'backup-service repository key', `${accountId}/${destination}`, 64);
  return masterKeyFromBytes(new Uint8Array(bytes));
}

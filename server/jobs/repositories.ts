import { join } from 'node:path';
import type { Secret } from '../engine/index.ts';
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
export function repositorySecret(dataDir: string, password: string | undefined): Secret {
  return { password: password ?? loadOrCreateSecret(dataDir, 'repository-password', 32).toString('base64url') };
}

import { existsSync } from 'node:fs';
import { SHARED_SECRETS, type Store } from '../store/index.ts';
import { loadOrCreateKeyFile, readKeyFile } from './key-file.ts';
import { fingerprint } from './master-key.ts';
import type { KeySettings, KeySource } from './settings.ts';

/** The secrets every instance must share: they are configuration, never made per instance. */
export interface SharedSecrets {
  /** Wraps every repository key. */
  master: Buffer;
  /** Signs access tokens: a token issued by one instance is good on all. */
  tokenSigning: Buffer;
}

/** This instance's secrets differ from those on record for the deployment. */
export class SecretMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretMismatchError';
  }
}

function load(source: KeySource): Buffer {
  return source.kind === 'env' ? source.key : loadOrCreateKeyFile(source.file, 32);
}

/** Reads both secrets from the configuration, creating a missing key file (0600) on first start. */
export function loadSharedSecrets(settings: KeySettings): SharedSecrets {
  return { master: load(settings.master), tokenSigning: load(settings.tokenSigning) };
}

function where(source: KeySource): string {
  return source.kind === 'env' ? `from ${source.name}` : `from ${source.file} (${source.name})`;
}

/**
 * The first instance records a fingerprint of each secret in the database; any later one whose
 * secrets differ refuses to start, so it never issues tokens the others reject or wraps keys
 * they cannot unwrap.
 */
export async function checkSharedSecrets(store: Store, secrets: SharedSecrets, settings: KeySettings): Promise<void> {
  const checks = [
    { name: SHARED_SECRETS.master, key: secrets.master, source: settings.master, label: 'master key' },
    { name: SHARED_SECRETS.tokenSigning, key: secrets.tokenSigning, source: settings.tokenSigning, label: 'token signing key' },
  ];
  for (const { name, key, source, label } of checks) {
    const mine = fingerprint(key);
    const recorded = await store.keys.fingerprint(name, mine);
    if (recorded === mine) continue;
    const rotating = name === SHARED_SECRETS.master && source.kind === 'file' && existsSync(`${source.file}.new`) && fingerprint(readKeyFile(`${source.file}.new`)) === recorded;
    throw new SecretMismatchError(
      rotating
        ? `A master key rotation was interrupted: the database uses ${source.file}.new. Run \`npm run keys -- rotate-master\` to finish it.`
        : `The ${label} ${where(source)} is not the one this deployment's data was set up with (the database records another fingerprint). ` +
          `Every instance must be given the same ${label}: copy it from a running instance (or set the same ${source.name}).`,
    );
  }
}

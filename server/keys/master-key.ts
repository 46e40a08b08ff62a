import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/**
 * The server master key wraps each repository's key (AES-256-GCM), with the account and the
 * destination as associated data: a wrapped key moved to another row does not open. The master
 * key itself never enters the database; only its fingerprint does.
 */
const VERSION = 1;
const NONCE = 12;
const TAG = 16;

export class KeyUnwrapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyUnwrapError';
  }
}

function associatedData(accountId: string, destination: string): Buffer {
  return Buffer.from(`backup-service repository key v1\0${accountId}\0${destination}`);
}

export function wrapKey(master: Uint8Array, key: Uint8Array, accountId: string, destination: string): Buffer {
  const nonce = randomBytes(NONCE);
  const cipher = createCipheriv('aes-256-gcm', master, nonce);
  cipher.setAAD(associatedData(accountId, destination));
  const sealed = Buffer.concat([cipher.update(key), cipher.final()]);
  return Buffer.concat([Uint8Array.of(VERSION), nonce, sealed, cipher.getAuthTag()]);
}

export function unwrapKey(master: Uint8Array, wrapped: Uint8Array, accountId: string, destination: string): Buffer {
  const w = Buffer.from(wrapped);
  if (w.length < 1 + NONCE + TAG || w[0] !== VERSION) throw new KeyUnwrapError('not a wrapped repository key');
  const decipher = createDecipheriv('aes-256-gcm', master, w.subarray(1, 1 + NONCE));
  decipher.setAAD(associatedData(accountId, destination));
  decipher.setAuthTag(w.subarray(w.length - TAG));
  try {
    return Buffer.concat([decipher.update(w.subarray(1 + NONCE, w.length - TAG)), decipher.final()]);
  } catch {
    throw new KeyUnwrapError(`the repository key of ${accountId}/${destination} does not open with this master key`);
  }
}

/** A fingerprint of a secret for comparing instances' configuration: it reveals nothing of the secret. */
export function fingerprint(secret: Uint8Array): string {
  return createHmac('sha256', secret).update('backup-service secret fingerprint v1').digest('hex').slice(0, 32);
}

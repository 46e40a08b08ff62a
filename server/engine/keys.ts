import { readFile } from 'node:fs/promises';
import { DEFAULT_SCRYPT, deriveFromKeyFile, deriveFromPassword, open } from './crypto.ts';
import type { MasterKey, ScryptParams } from './crypto.ts';
import { EngineError, fromStorage } from './errors.ts';
import { listAll, type Backend } from './storage/backend.ts';

/**
 * Key files of format-1 repositories (keys/<id>): the master key wrapped with AES-256-GCM under
 * a key derived from a password (scrypt) or a key file's bytes (HKDF). Format 2 keeps no key in
 * the repository: its caller holds the key. This module only unwraps the old files, so that a
 * caller can move the key of an existing repository into its own key store.
 */
export type Secret = { password: string } | { keyFile: string };

interface KeyFileJson {
  version: 1;
  kdf: 'scrypt' | 'keyfile';
  scrypt?: ScryptParams;
  salt: string;
  data: string;
}

const AAD = Buffer.from('repository master key');

async function wrappingKey(secret: Secret, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  if ('password' in secret) return deriveFromPassword(secret.password, salt, params);
  let material: Buffer;
  try {
    material = await readFile(secret.keyFile);
  } catch (err) {
    throw new EngineError('KEY_FILE_UNREADABLE', `cannot read the key file: ${(err as Error).message}`, { keyFile: secret.keyFile });
  }
  if (material.length < 32) throw new EngineError('KEY_FILE_UNREADABLE', 'a key file holds at least 32 bytes', { keyFile: secret.keyFile });
  return deriveFromKeyFile(material, salt);
}

/** Whether the repository keeps format-1 key files. */
export async function hasLegacyKeys(backend: Backend): Promise<boolean> {
  try {
    for await (const _ of backend.list('keys/')) return true;
    return false;
  } catch (err) {
    throw fromStorage(err);
  }
}

/** Unwraps the master key from the first key file the secret opens; WRONG_PASSWORD when none does. */
export async function unlockLegacyKey(backend: Backend, secret: Secret): Promise<MasterKey> {
  const kdf = 'password' in secret ? 'scrypt' : 'keyfile';
  let names;
  try {
    names = await listAll(backend, 'keys/');
  } catch (err) {
    throw fromStorage(err);
  }
  for (const { name } of names) {
    let json: KeyFileJson;
    try {
      json = JSON.parse(Buffer.from(await backend.load(name)).toString('utf8')) as KeyFileJson;
    } catch {
      continue;
    }
    if (json.kdf !== kdf) continue;
    const wrap = await wrappingKey(secret, Buffer.from(json.salt, 'base64'), json.scrypt ?? DEFAULT_SCRYPT);
    let payload: Buffer;
    try {
      payload = open(wrap, Buffer.from(json.data, 'base64'), AAD);
    } catch {
      continue;
    }
    const keys = JSON.parse(payload.toString('utf8')) as { encryption: string; chunkId: string };
    return { encryption: Buffer.from(keys.encryption, 'base64'), chunkId: Buffer.from(keys.chunkId, 'base64') };
  }
  throw new EngineError('WRONG_PASSWORD', 'no key file of this repository opens with the given secret');
}

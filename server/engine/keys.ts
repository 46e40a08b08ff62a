import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { DEFAULT_SCRYPT, deriveFromKeyFile, deriveFromPassword, open, seal } from './crypto.ts';
import type { MasterKey, ScryptParams } from './crypto.ts';
import { EngineError } from './errors.ts';
import { listAll, type Backend } from './storage/backend.ts';

/**
 * Key files (keys/<id>), as restic does: the master key wrapped with AES-256-GCM under a
 * key derived from the password (scrypt) or from a key file's bytes (HKDF). Several may
 * exist; any one unlocks the repository.
 */
export type Secret = { password: string } | { keyFile: string };

interface KeyFileJson {
  version: 1;
  kdf: 'scrypt' | 'keyfile';
  scrypt?: ScryptParams;
  salt: string;
  created: string;
  hostname: string;
  data: string;
}

const AAD = Buffer.from('repository master key');

async function wrappingKey(secret: Secret, kdf: KeyFileJson['kdf'], salt: Buffer, params: ScryptParams): Promise<Buffer> {
  if ('password' in secret) return deriveFromPassword(secret.password, salt, params);
  let material: Buffer;
  try {
    material = await readFile(secret.keyFile);
  } catch (err) {
    throw new EngineError('KEY_FILE_UNREADABLE', `cannot read the key file: ${(err as Error).message}`, { keyFile: secret.keyFile });
  }
  if (material.length < 32) throw new EngineError('KEY_FILE_UNREADABLE', 'a key file holds at least 32 bytes', { keyFile: secret.keyFile });
  void kdf;
  return deriveFromKeyFile(material, salt);
}

function kdfOf(secret: Secret): KeyFileJson['kdf'] {
  return 'password' in secret ? 'scrypt' : 'keyfile';
}

export function newMasterKey(): MasterKey {
  return { encryption: randomBytes(32), chunkId: randomBytes(32) };
}

export async function writeKey(backend: Backend, secret: Secret, master: MasterKey): Promise<string> {
  const salt = randomBytes(32);
  const kdf = kdfOf(secret);
  const wrap = await wrappingKey(secret, kdf, salt, DEFAULT_SCRYPT);
  const payload = Buffer.from(JSON.stringify({ encryption: master.encryption.toString('base64'), chunkId: master.chunkId.toString('base64') }));
  const json: KeyFileJson = {
    version: 1,
    kdf,
    ...(kdf === 'scrypt' ? { scrypt: DEFAULT_SCRYPT } : {}),
    salt: salt.toString('base64'),
    created: new Date().toISOString(),
    hostname: hostname(),
    data: seal(wrap, payload, AAD).toString('base64'),
  };
  const id = randomBytes(16).toString('hex');
  await backend.save(`keys/${id}`, [Buffer.from(JSON.stringify(json, null, 2))]);
  return id;
}

/** Tries every key file of the secret's kind; WRONG_PASSWORD when none opens. */
export async function unlock(backend: Backend, secret: Secret): Promise<MasterKey> {
  const kdf = kdfOf(secret);
  for (const { name } of await listAll(backend, 'keys/')) {
    let json: KeyFileJson;
    try {
      json = JSON.parse(Buffer.from(await backend.load(name)).toString('utf8')) as KeyFileJson;
    } catch {
      continue;
    }
    if (json.kdf !== kdf) continue;
    const wrap = await wrappingKey(secret, kdf, Buffer.from(json.salt, 'base64'), json.scrypt ?? DEFAULT_SCRYPT);
    let payload: Buffer;
    try {
      payload = open(wrap, Buffer.from(json.data, 'base64'), AAD);
    } catch {
      continue;
    }
    const keys = JSON.parse(payload.toString('utf8')) as { encryption: string; chunkId: string };
    return { encryption: Buffer.from(keys.encryption, 'base64'), chunkId: Buffer.from(keys.chunkId, 'base64') };
  }
  throw new EngineError('WRONG_PASSWORD', 'no key of this repository opens with the given secret');
}

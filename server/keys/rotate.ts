import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, renameSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { SHARED_SECRETS, type Store } from '../store/index.ts';
import { fsyncDirectory, readKeyFile, writeKeyFile } from './key-file.ts';
import { fingerprint, unwrapKey, wrapKey } from './master-key.ts';
import type { KeySettings } from './settings.ts';

/**
 * Replaces the master key without rewriting any data: every repository key is unwrapped with the
 * old master key and wrapped with a new one, in one database transaction. The new key is written
 * first beside the old (`<file>.new`, atomically), the old one is kept aside (`<file>.old`) until
 * the new one is in place, then removed. Interrupted at any point, running it again finishes the
 * job: nothing is ever left that no key file opens.
 */
export async function rotateMasterKey(store: Store, settings: KeySettings): Promise<{ rewrapped: number; file: string }> {
  const source = settings.master;
  if (source.kind !== 'file') {
    throw new Error('MASTER_KEY is set in the environment: rotate by moving to a MASTER_KEY_FILE holding the same key, rotating, then using the new file.');
  }
  const file = source.file;
  const next = `${file}.new`;
  const current = readKeyFile(file);
  const recorded = await store.keys.fingerprint(SHARED_SECRETS.master, fingerprint(current));
  let rewrapped = 0;
  if (recorded !== fingerprint(current)) {
    // Only a rotation interrupted after its database commit explains this; anything else is the wrong key.
    if (!existsSync(next) || fingerprint(readKeyFile(next)) !== recorded) {
      throw new Error(`${file} is not the master key this deployment's data was set up with.`);
    }
  } else {
    if (!existsSync(next)) writeKeyFile(next, randomBytes(32));
    const fresh = readKeyFile(next);
    const done = await store.keys.rotateMaster(fingerprint(current), fingerprint(fresh), (k) => {
      rewrapped++;
      return wrapKey(fresh, unwrapKey(current, k.wrapped, k.accountId, k.destination), k.accountId, k.destination);
    });
    if (!done) throw new Error('Another rotation changed the master key meanwhile; run the command again.');
  }
  const old = `${file}.old`;
  if (existsSync(old)) unlinkSync(old);
  linkSync(file, old);
  renameSync(next, file);
  fsyncDirectory(dirname(file));
  unlinkSync(old);
  fsyncDirectory(dirname(file));
  return { rewrapped, file };
}

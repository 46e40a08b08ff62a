import { join } from 'node:path';
import { masterKeyToBytes, newMasterKey } from '../crypto.ts';
import type { MasterKey } from '../crypto.ts';
import { Repository } from '../repository.ts';
import { LocalBackend } from '../storage/local.ts';

/** Test helper: a repository in `dir/repo` on the local backend, with a key the test keeps. */
export interface TestRepo {
  repo: Repository;
  dir: string;
  key: MasterKey;
  keyHex: string;
  reopen(): Promise<Repository>;
}

export async function openTestRepo(base: string, key: MasterKey = newMasterKey()): Promise<TestRepo> {
  const dir = join(base, 'repo');
  const reopen = (): Promise<Repository> => Repository.open(new LocalBackend(dir), key);
  return { repo: await reopen(), dir, key, keyHex: masterKeyToBytes(key).toString('hex'), reopen };
}

/** Bytes of a text path, for comparing with the engine's byte paths. */
export function b(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'utf8'));
}

/** The text of a byte path (UTF-8; tests use it on names that are valid UTF-8). */
export function t(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('utf8');
}

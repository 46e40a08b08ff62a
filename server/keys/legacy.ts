import { existsSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { masterKeyToBytes, unlockLegacyKey } from '../engine/index.ts';
import { LocalBackend } from '../engine/storage/local.ts';
import { fsyncDirectory, readKeyFile } from './key-file.ts';
import type { RepositoryKeys } from './repository-keys.ts';

/** Where 1.0.0 kept the one password of every repository, beside the data. */
export function legacyPasswordFile(dataDir: string): string {
  return join(dataDir, 'secrets', 'repository-password');
}

/** The repositories on disk: DATA_DIR/repositories/<account>/<destination>, each with a config. */
function repositoriesOnDisk(dataDir: string): Array<{ accountId: string; destination: string; dir: string }> {
  const root = join(dataDir, 'repositories');
  const out: Array<{ accountId: string; destination: string; dir: string }> = [];
  if (!existsSync(root)) return out;
  for (const account of readdirSync(root, { withFileTypes: true })) {
    if (!account.isDirectory()) continue;
    for (const dest of readdirSync(join(root, account.name), { withFileTypes: true })) {
      const dir = join(root, account.name, dest.name);
      if (dest.isDirectory() && existsSync(join(dir, 'config'))) out.push({ accountId: account.name, destination: dest.name, dir });
    }
  }
  return out;
}

/**
 * Data directories written by 1.0.0 keyed every repository with one password kept in
 * DATA_DIR/secrets (or BACKUP_REPOSITORY_PASSWORD). At start, each repository without a key in
 * the Store gets one: the password opens the repository's key file, and the key it holds is kept
 * in the Store, wrapped by the master key. Once every repository
 * has its key, the password file is removed: the data directory alone then opens nothing.
 * Nothing is rewritten; a repository that does not open is reported and left for the next start.
 */
export async function migrateLegacyRepositoryKeys(opts: {
  dataDir: string;
  password: string | undefined;
  keys: RepositoryKeys;
  logger: Logger;
}): Promise<{ migrated: string[]; failed: string[] }> {
  const file = legacyPasswordFile(opts.dataDir);
  const password = opts.password ?? (existsSync(file) ? readKeyFile(file).toString('base64url') : undefined);
  const migrated: string[] = [];
  const failed: string[] = [];
  if (password === undefined) return { migrated, failed };
  for (const repo of repositoriesOnDisk(opts.dataDir)) {
    const name = `${repo.accountId}/${repo.destination}`;
    if (await opts.keys.get(repo.accountId, repo.destination)) continue;
    try {
      const backend = new LocalBackend(repo.dir);
      await opts.keys.put(repo.accountId, repo.destination, masterKeyToBytes(await unlockLegacyKey(backend, { password })));
      migrated.push(name);
    } catch (err) {
      opts.logger.error({ err, repository: name }, 'could not give a 1.0.0 repository its own key; its password stays until it can');
      failed.push(name);
    }
  }
  if (failed.length === 0 && existsSync(file)) {
    unlinkSync(file);
    fsyncDirectory(join(opts.dataDir, 'secrets'));
  }
  if (migrated.length) opts.logger.warn({ repositories: migrated }, 'repositories of 1.0.0 now have their own keys, wrapped by the master key');
  if (failed.length === 0 && opts.password !== undefined) {
    opts.logger.warn('every repository has its own key: BACKUP_REPOSITORY_PASSWORD is no longer used and can be removed');
  }
  return { migrated, failed };
}

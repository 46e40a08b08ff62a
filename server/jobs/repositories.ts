import type { Destinations } from '../destinations/registry.ts';
import { Repository, fromStorage, masterKeyFromBytes } from '../engine/index.ts';
import { ObjectNotFoundError } from '../engine/storage/errors.ts';
import type { RepositoryKeys } from '../keys/repository-keys.ts';
import { JobFailure } from './queue.ts';

/** The lock key under which jobs of one repository run one at a time. */
export function repositoryLockKey(accountId: string, destination: string): string {
  return `${accountId}/${destination}`;
}

/** The lock key of a repository's maintenance jobs: they run beside its backups, one at a time. */
export function maintenanceLockKey(accountId: string, destination: string): string {
  return `${repositoryLockKey(accountId, destination)}#maintenance`;
}

/** Opens the repository of an account and destination (its Backend from the destinations, its key from the Store). */
export class RepositoryOpener {
  private readonly destinations: Pick<Destinations, 'has' | 'backendFor'>;
  private readonly keys: RepositoryKeys;

  constructor(destinations: Pick<Destinations, 'has' | 'backendFor'>, keys: RepositoryKeys) {
    this.destinations = destinations;
    this.keys = keys;
  }

  /** The repository, made (with its key) on first use; with `create: false`, null when it was never made. */
  async open(accountId: string, destination: string, options: { create?: boolean } = {}): Promise<Repository | null> {
    if (!this.destinations.has(destination)) throw new JobFailure('DESTINATION_UNAVAILABLE', `Destination ${destination} is not configured.`);
    const backend = this.destinations.backendFor(accountId, destination);
    if (options.create === false) {
      const made = await backend.stat('config').then(() => true, (err: unknown) => {
        if (err instanceof ObjectNotFoundError) return false;
        throw fromStorage(err);
      });
      if (!made) return null;
    }
    return Repository.open(backend, masterKeyFromBytes(await this.keys.getOrCreate(accountId, destination)));
  }
}

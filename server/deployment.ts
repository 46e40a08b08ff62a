import { chmodSync, mkdirSync } from 'node:fs';
import type { Logger } from 'pino';
import { ensureStartupKey, type StartupKeyOutcome } from './auth/api-keys.ts';
import { TokenService } from './auth/tokens.ts';
import type { Config } from './config.ts';
import { jobStatusObserver, type ServiceEvents } from './events.ts';
import type { Destinations } from './destinations/registry.ts';
import { LeasedJobQueue } from './jobs/leased-queue.ts';
import type { JobQueue } from './jobs/queue.ts';
import { RepositoryOpener } from './jobs/repositories.ts';
import { MaintenanceSchedule } from './maintenance/schedule.ts';
import { createJobRunner } from './jobs/runners.ts';
import { migrateLegacyRepositoryKeys } from './keys/legacy.ts';
import { RepositoryKeys } from './keys/repository-keys.ts';
import { checkSharedSecrets, loadSharedSecrets } from './keys/shared-secrets.ts';
import { openStore, type Store } from './store/index.ts';

/** The parts that make one shape or the other (docs/deploy.md), opened and checked at start. */
export interface Deployment {
  store: Store;
  queue: JobQueue;
  tokens: TokenService;
  repositories: RepositoryOpener;
  schedule: MaintenanceSchedule;
  /** What start-up did about keys: the caller prints a new development key once. */
  startupKey: StartupKeyOutcome;
  recovered: { interrupted: string[]; requeued: number };
}

/**
 * Opens the store the configuration names (SQLite in DATA_DIR, locked to this process; or
 * PostgreSQL, shared), checks that this instance's shared secrets are the deployment's, gives
 * 1.0.0 repositories their own keys, makes the start-up API key, and starts the job queue,
 * which recovers what a stopped server left running. Every change of job status this instance
 * makes, recovery included, is reported to `events` (metrics, audit log).
 */
export async function openDeployment(config: Config, logger: Logger, destinations: Destinations, observers: { events: ServiceEvents }): Promise<Deployment> {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(config.dataDir, 0o700);
  const secrets = loadSharedSecrets(config.keys);
  const store = await openStore(config, { exclusive: true });
  try {
    await checkSharedSecrets(store, secrets, config.keys);
    const keys = new RepositoryKeys(store, secrets.master);
    await migrateLegacyRepositoryKeys({ dataDir: config.dataDir, password: config.keys.legacyRepositoryPassword, keys, logger });
    const startupKey = await ensureStartupKey(store, config.bootstrap);
    const queue = new LeasedJobQueue({
      store,
      run: createJobRunner({ store, dataDir: config.dataDir, allowedRoots: config.allowedRoots, keys, destinations, logger }),
      logger,
      concurrency: config.jobConcurrency,
      accountCap: config.jobs.accountConcurrency,
      queueLimit: config.jobs.queueLimit,
      leaseMs: config.jobs.leaseMs,
      sole: config.databaseUrl === null,
      observer: jobStatusObserver(observers.events, store, logger),
    });
    const { interrupted, queued } = await queue.start();
    if (interrupted.length || queued) logger.warn({ interrupted, queued }, 'recovered jobs left by a stopped server');
    const schedule = new MaintenanceSchedule({ store, queue, settings: config.maintenance, logger });
    schedule.start();
    return { store, queue, tokens: new TokenService(secrets.tokenSigning), repositories: new RepositoryOpener(destinations, keys), schedule, startupKey, recovered: { interrupted, requeued: queued } };
  } catch (err) {
    await store.close();
    throw err;
  }
}

import type { Logger } from 'pino';
import { newId } from '../ids.ts';
import type { JobQueue } from '../jobs/queue.ts';
import { maintenanceLockKey } from '../jobs/repositories.ts';
import type { Store } from '../store/index.ts';
import type { MaintenanceSettings } from './settings.ts';

const HOUR_MS = 3_600_000;
/** How often the schedule looks for repositories due (a due job starts within this). */
const TICK_MS = 5 * 60_000;

/**
 * Queues the scheduled prunes and checks, as maintenance jobs with trigger `schedule`: for every
 * repository with backups whose last prune (not a dry run) or check was queued longer ago than its
 * interval. The queue runs them like requested ones, beside the repository's backups; the store
 * never queues a second one for a repository, so instances that tick together queue it once.
 */
export class MaintenanceSchedule {
  private readonly o: { store: Store; queue: JobQueue; settings: MaintenanceSettings; logger: Logger; tickMs?: number };
  private timer: NodeJS.Timeout | null = null;

  constructor(options: MaintenanceSchedule['o']) {
    this.o = options;
  }

  start(): void {
    const { pruneHours, checkHours } = this.o.settings;
    if (pruneHours === 0 && checkHours === 0) return;
    this.timer = setInterval(() => void this.tick().catch((err: unknown) => this.o.logger.warn({ err }, 'maintenance schedule failed; retrying')), this.o.tickMs ?? TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Queues what is due now. */
  async tick(now = Date.now()): Promise<string[]> {
    const { store, queue, settings } = this.o;
    const queued: string[] = [];
    for (const [operation, hours] of [['prune', settings.pruneHours], ['check', settings.checkHours]] as const) {
      if (hours === 0) continue;
      for (const r of await store.jobs.maintenanceDue(operation, new Date(now - hours * HOUR_MS).toISOString())) {
        const subset = settings.checkReadPercent > 0 ? `${settings.checkReadPercent}%` : null;
        const submitted = await queue.submitMaintenance({
          id: newId('mnt'),
          accountId: r.accountId,
          repository: maintenanceLockKey(r.accountId, r.destination),
          operation,
          destination: r.destination,
          trigger: 'schedule',
          dryRun: false,
          readData: operation === 'check' && settings.checkReadPercent === 100,
          readDataSubset: operation === 'check' && settings.checkReadPercent < 100 ? subset : null,
        });
        if (submitted?.inserted) queued.push(submitted.job.id);
      }
    }
    if (queued.length) this.o.logger.info({ jobs: queued }, 'scheduled maintenance queued');
    return queued;
  }
}

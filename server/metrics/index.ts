/**
 * Prometheus metrics with prom-client: the registry (ours and prom-client's default process
 * metrics), the HTTP middleware, the observers of service events, the gauges read at scrape
 * time, and the listener that serves them on its own port (METRICS_PORT), never the API's.
 */
import { createServer, type Server } from 'node:http';
import type { FinishedRequest } from '../http/logger.ts';
import type { OperationIndex } from '../http/operation-of.ts';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { observer, type ServiceEvents } from '../events.ts';
import type { JobQueue } from '../jobs/queue.ts';
import { freeSpace, repositoriesDir, type FreeSpaceThreshold } from '../storage-space.ts';
import type { Store } from '../store/index.ts';
import { defineMetrics, type MetricSet } from './definitions.ts';
import { httpMetrics } from './http.ts';

/** What the scrape-time gauges read. */
export interface MetricSources {
  store: Store;
  queue: JobQueue;
  dataDir: string;
  /** The free-space threshold of the storage check (STORAGE_MIN_FREE_*). */
  threshold: FreeSpaceThreshold;
  /** The expiry of the certificate being served, with built-in TLS. */
  certificateExpiry?: () => Date | null;
}

const seconds = (iso: string): number => Date.parse(iso) / 1000;

export class Metrics {
  readonly registry = new Registry();
  private readonly metrics: MetricSet;
  private sources: MetricSources | null = null;
  private readonly logger: Logger;

  /**
   * The registry and its metrics; observe() and readAtScrape() connect them to the service.
   * `processMetrics: false` leaves out prom-client's process collectors, which observe the process
   * for as long as it runs (the warm-up's throwaway registry, server/warm-up).
   */
  constructor(logger: Logger, options: { processMetrics?: boolean } = {}) {
    this.logger = logger;
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    this.metrics = defineMetrics(this.registry);
  }

  /** Where the gauges set at scrape time read (once the store and queue are open). */
  readAtScrape(sources: MetricSources): void {
    this.sources = sources;
    // A gauge without labels always shows a value: one whose source is not configured is left out.
    if (!sources.certificateExpiry) this.registry.removeSingleMetric('backup_tls_certificate_expiry_timestamp_seconds');
  }

  /** Counts and times every finished request by operation and status class (called by the request log). */
  http(operations: OperationIndex): FinishedRequest {
    return httpMetrics(this.metrics, operations);
  }

  /** Counts what the service reports: tokens, refusals, jobs created, started and finished. */
  observe(events: ServiceEvents): void {
    const m = this.metrics;
    const on = observer(events, this.logger);
    on('auth.token_issued', () => m.tokensIssued.inc());
    on('auth.failed', (e) => m.authFailures.inc({ reason: e.reason }));
    on('ratelimit.rejected', (e) => m.rateLimitRejections.inc({ limit: e.limit }));
    on('job.requested', ({ job }) => m.jobsCreated.inc({ kind: job.kind }));
    on('job.started', ({ job }) => {
      if (job.startedAt) m.jobQueueWait.observe({ kind: job.kind }, Math.max(0, seconds(job.startedAt) - seconds(job.createdAt)));
    });
    on('job.finished', ({ job }) => {
      const { kind } = job;
      m.jobsFinished.inc({ kind, status: job.status, error_code: job.status === 'failed' ? (job.error?.code ?? 'INTERNAL_ERROR') : '' });
      if (job.startedAt && job.finishedAt) m.jobDuration.observe({ kind }, Math.max(0, seconds(job.finishedAt) - seconds(job.startedAt)));
      if (job.status !== 'completed') return;
      if (job.kind === 'maintenance') return;
      m.jobReadBytes.inc({ kind }, job.sizeBytes);
      if (job.kind === 'backup') m.jobStoredBytes.inc({ kind }, job.storedBytes);
    });
  }

  /**
   * Sets the gauges that are read, not counted: shared job state, storage, certificate. Everything
   * is read first and set after, at once, so a concurrent scrape never sees a half-set family.
   */
  private async refresh(): Promise<void> {
    if (!this.sources) return;
    const m = this.metrics;
    const { store, queue, dataDir, threshold } = this.sources;
    const [summary, space] = await Promise.all([
      store.jobs.summary().catch((err: unknown) => {
        this.logger.warn({ err }, 'metrics: the job summary could not be read');
        return null;
      }),
      freeSpace(repositoriesDir(dataDir), threshold)
        .catch(() => freeSpace(dataDir, threshold))
        .catch(() => null),
    ]);

    m.instanceJobsRunning.set(queue.runningHere);
    m.clusterJobs.reset();
    m.clusterLastBackup.reset();
    m.clusterRepositoryBytes.reset();
    // With the database down the labelled shared gauges go absent rather than stale (readiness says why).
    if (summary) {
      m.clusterJobs.set({ state: 'queued' }, summary.queued);
      m.clusterJobs.set({ state: 'running' }, summary.running);
      m.clusterOldestQueuedAge.set(summary.oldestQueuedAt ? Math.max(0, Date.now() / 1000 - seconds(summary.oldestQueuedAt)) : 0);
      for (const d of summary.destinations) {
        m.clusterLastBackup.set({ destination: d.destination }, seconds(d.lastCompletedAt));
        m.clusterRepositoryBytes.set({ destination: d.destination }, d.storedBytes);
      }
    }
    if (space) {
      m.storageFree.set(space.freeBytes);
      m.storageFreeThreshold.set(space.limitBytes);
    }
    const expiry = this.sources.certificateExpiry?.();
    if (expiry) m.certificateExpiry.set(expiry.getTime() / 1000);
  }

  /** The exposition, as a scrape gets it. */
  async scrape(): Promise<string> {
    await this.refresh();
    return this.registry.metrics();
  }

  /** Serves GET /metrics on its own listener; anything else there answers 404. */
  listen(port: number, host: string): Promise<Server> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Only GET /metrics is served here.\n');
        return;
      }
      this.scrape().then(
        (body) => res.writeHead(200, { 'content-type': this.registry.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : body),
        (err: unknown) => {
          this.logger.error({ err }, 'metrics scrape failed');
          res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('The metrics could not be collected.\n');
        },
      );
    });
    return new Promise((resolve, reject) => {
      const refused = (err: NodeJS.ErrnoException): void =>
        reject(new Error(`The metrics listener cannot listen on ${host}:${port} (${err.code ?? err.message}); set METRICS_PORT to a free port, or to 0 to turn metrics off.`));
      server.once('error', refused);
      server.listen(port, host, () => {
        server.off('error', refused);
        resolve(server);
      });
    });
  }
}

import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import { join } from 'node:path';
import express, { Router, type Express } from 'express';
import type { Logger } from 'pino';
import { backupBasePath } from '../generated/backup-handlers.ts';
import { toolsBasePath } from '../generated/tools-handlers.ts';
import { AuditLog } from './audit/log.ts';
import { auditServiceEvents } from './audit/observer.ts';
import { reportStartupKey, type StartupKeyOutcome } from './auth/api-keys.ts';
import type { Config } from './config.ts';
import type { Services } from './context.ts';
import { openDeployment } from './deployment.ts';
import { createServiceEvents } from './events.ts';
import { Health } from './health.ts';
import { Destinations } from './destinations/registry.ts';
import type { S3Limits } from './engine/storage/s3-retry.ts';
import { directJson } from './http/json-response.ts';
import { createLogger } from './http/logger.ts';
import { GENERATED_DIR, loadDocument, mergeDocuments, openApiValidator } from './http/openapi.ts';
import { listen } from './http/listen.ts';
import { openRateLimitStore } from './ratelimit/select.ts';
import { apiRoutes, type HttpParts } from './routes.ts';
import type { RateLimitStore } from './ratelimit/store.ts';
import { storageCheck } from './storage-space.ts';
import { certificateCheck, ServerCertificate } from './tls/server-certificate.ts';
import { targetPolicy } from './tools-api/net/target-policy.ts';
import { warmUp, type WarmUpReport } from './warm-up/index.ts';

export interface AppOptions {
  logger?: Logger;
  /** Where the bundled OpenAPI documents are read from (default generated/). */
  specDir?: string;
  /** Check-site overrides for tests (a resolver, a CA); the policy follows the config. */
  siteCheck?: Partial<Services['siteCheck']>;
  ipInfo?: Services['ipInfo'];
  rateLimitStore?: RateLimitStore;
  /** Where audit lines go (default: AUDIT_LOG). */
  auditLog?: AuditLog;
  /** Object-store timeouts and retries (fault tests shorten them); the defaults otherwise. */
  s3Limits?: S3Limits;
}

export interface BackupServiceApp {
  app: Express;
  services: Services;
  /** What start-up did about keys: the caller prints a new development key once. */
  startupKey: StartupKeyOutcome;
  recovered: { interrupted: string[]; requeued: number };
  listen(port?: number, host?: string): Promise<Server>;
  /** Serves /metrics on its own listener (default METRICS_PORT, METRICS_HOST); null when metrics are off. */
  listenMetrics(port?: number, host?: string): Promise<Server | null>;
  /** Before `listen`: warms the HTTP code with WARM_UP_REQUESTS requests against throwaway state (server/warm-up). */
  warmUp(requests?: number): Promise<WarmUpReport>;
  /** Graceful stop: refuse new requests, let running ones finish, interrupt jobs, close the database. */
  close(): Promise<void>;
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

export async function createApp(config: Config, options: AppOptions = {}): Promise<BackupServiceApp> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const events = createServiceEvents();
  const audit = options.auditLog ?? AuditLog.open(config.audit);
  auditServiceEvents(events, audit, logger);
  // Observers first: what start-up does (a key made, jobs recovered) is counted and audited too.
  // prom-client is loaded only when metrics are served.
  const metrics = config.metrics.port === null ? null : new (await import('./metrics/index.ts')).Metrics(logger);
  metrics?.observe(events);
  const destinations = await Destinations.open(config.destinations, options.s3Limits ? { s3Limits: options.s3Limits } : {});
  await destinations.validate().catch((err: unknown) => {
    destinations.close();
    audit.close();
    throw err;
  });
  if (destinations.kindOf('cloud') === 'local') logger.warn('destination cloud is kept on this server\'s own disk, not off-site; set CLOUD_S3_BUCKET to keep it in object storage (docs/deploy.md)');
  // The certificate first: a bad TLS file stops the start before the data directory is locked.
  const certificate = config.tls ? new ServerCertificate(config.tls, logger) : undefined;
  const { store, queue, tokens, repositories, schedule, startupKey, recovered } = await openDeployment(config, logger, destinations, { events }).catch((err: unknown) => {
    certificate?.close();
    destinations.close();
    audit.close();
    throw err;
  });
  await reportStartupKey(events, store, startupKey);

  const health = new Health({ database: () => store.ping(), storage: () => storageCheck(config.dataDir, config.storageFree) });
  if (certificate) health.add({ name: 'certificate', advisory: true, run: () => certificateCheck(certificate) });
  if (destinations.hasObjectStore) health.add({ name: 'object_store', run: () => destinations.checkObjectStores() });
  metrics?.readAtScrape({
    store,
    queue,
    dataDir: config.dataDir,
    threshold: config.storageFree,
    ...(certificate ? { certificateExpiry: () => certificate.current.notAfter } : {}),
  });

  const services: Services = {
    config,
    store,
    tokens,
    queue,
    logger,
    events,
    health,
    startedAt: Date.now(),
    version: packageVersion(),
    siteCheck: { policy: targetPolicy({ allowPrivate: config.checkSiteAllowPrivate }), ...options.siteCheck },
    ipInfo: options.ipInfo ?? {},
    certificate,
    repositories,
    destinations,
  };

  const specDir = options.specDir ?? GENERATED_DIR;
  const merged = mergeDocuments([
    { doc: loadDocument(specDir, 'backup'), basePath: backupBasePath },
    { doc: loadDocument(specDir, 'tools'), basePath: toolsBasePath },
  ]);
  const validator = await openApiValidator(merged, config.validateResponses);
  const limits = options.rateLimitStore ?? (await openRateLimitStore(config.redisUrl, logger));
  if (limits.ping) health.add({ name: 'redis', run: () => limits.ping!() });
  let shuttingDown = false;
  const parts: HttpParts = { services, merged, validator, limits, metrics, isShuttingDown: () => shuttingDown };
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('etag', false);
  directJson(app);
  // One app for the service and its warm-up, so that both run the same code on the same kinds of
  // request and response objects (Express gives each app its own prototypes for them); a request of
  // the warm-up's own listener goes to the warm-up's routes (server/warm-up).
  const routes = apiRoutes(parts);
  const warmUpRoutes = new WeakMap<IncomingMessage, Router>();
  app.use((req, res, next) => (warmUpRoutes.get(req) ?? routes)(req, res, next));

  let server: Server | undefined;
  let metricsServer: Server | null = null;
  return {
    app,
    services,
    startupKey,
    recovered,
    async listen(port = config.port, host = config.host) {
      server = await listen(app, { port, host, certificate: services.certificate });
      return server;
    },
    warmUp(requests = config.warmUpRequests) {
      return warmUp(requests, parts, (warmUpParts) => {
        const warmRoutes = apiRoutes(warmUpParts);
        return (req, res) => {
          warmUpRoutes.set(req, warmRoutes);
          app(req, res);
        };
      });
    },
    async listenMetrics(port = config.metrics.port ?? undefined, host = config.metrics.host) {
      if (!metrics || port === undefined) return null;
      metricsServer = await metrics.listen(port, host);
      return metricsServer;
    },
    async close() {
      if (shuttingDown || health.draining) return;
      // Readiness off first; the API keeps serving while load balancers take the instance out.
      health.draining = true;
      if (config.shutdownDrainMs > 0) await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
      shuttingDown = true;
      const closed = server
        ? new Promise<void>((resolve) => {
            server!.close(() => resolve());
            server!.closeIdleConnections();
          })
        : Promise.resolve();
      // Jobs and in-flight requests share one SHUTDOWN_TIMEOUT_MS, so the whole stop is bounded by it.
      const timer = setTimeout(() => server?.closeAllConnections(), config.shutdownTimeoutMs);
      schedule.stop();
      await queue.close(config.shutdownTimeoutMs);
      await closed;
      clearTimeout(timer);
      if (!options.rateLimitStore) await limits.close?.();
      services.certificate?.close();
      await store.close();
      metricsServer?.close();
      audit.close();
      destinations.close();
    },
  };
}

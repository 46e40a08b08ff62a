import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import { join } from 'node:path';
import express, { Router, type Express, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import { backupBasePath, backupOperations } from '../generated/backup-handlers.ts';
import { toolsBasePath, toolsOperations } from '../generated/tools-handlers.ts';
import { AuditLog } from './audit/log.ts';
import { auditServiceEvents } from './audit/observer.ts';
import { reportStartupKey, type StartupKeyOutcome } from './auth/api-keys.ts';
import { requireBearer } from './auth/middleware.ts';
import { backupHandlers } from './backup-api/index.ts';
import type { Config } from './config.ts';
import type { RequestContext, Services } from './context.ts';
import { openDeployment } from './deployment.ts';
import { createServiceEvents } from './events.ts';
import { Health } from './health.ts';
import { Destinations } from './destinations/registry.ts';
import type { S3Limits } from './engine/storage/s3-retry.ts';
import { clientAddress, clientKey } from './http/client-address.ts';
import { cors } from './http/cors.ts';
import { ApiError } from './http/errors.ts';
import { errorHandler } from './http/error-handler.ts';
import { jsonBody } from './http/json-body.ts';
import { directJson } from './http/json-response.ts';
import { authOf, maybeAuthOf, requestIdOf } from './http/locals.ts';
import { createLogger, requestLogger } from './http/logger.ts';
import { GENERATED_DIR, loadDocument, mergeDocuments, openApiValidator, takesBody, type OpenApiDocument, type OperationValidator } from './http/openapi.ts';
import { httpsPolicy } from './http/https-policy.ts';
import { listen } from './http/listen.ts';
import { operationIndex, operationLookup } from './http/operation-of.ts';
import { handlerRoute } from './http/operation-route.ts';
import { failureLimit, rateLimit } from './http/rate-limit.ts';
import { reportRefusals } from './http/refusals.ts';
import { requestId } from './http/request-id.ts';
import { dispatcher } from './http/dispatch.ts';
import type { Metrics } from './metrics/index.ts';
import { PROBE_OPERATIONS } from './probes/index.ts';
import { ACCOUNT_WINDOW_MS, AUTH_FAILURES, planLimit, TOKEN_REQUESTS, TOOL_LIMITS } from './ratelimit/limits.ts';
import { openRateLimitStore } from './ratelimit/select.ts';
import type { RateLimitStore } from './ratelimit/store.ts';
import { storageCheck } from './storage-space.ts';
import { certificateCheck, ServerCertificate } from './tls/server-certificate.ts';
import { toolsHandlers } from './tools-api/index.ts';
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
  const parts: HttpParts = { config, services, merged, validator, limits, logger, metrics, isShuttingDown: () => shuttingDown };
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  // For Express's own routing; the operations are matched exactly by the dispatcher (server/http/dispatch.ts).
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
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

/** What the routes are built from: the service's own, or a warm-up's throwaway copy (server/warm-up). */
export interface HttpParts {
  config: Config;
  services: Services;
  /** Both bundled documents, merged. */
  merged: OpenApiDocument;
  validator: OperationValidator;
  limits: RateLimitStore;
  logger: Logger;
  /** The HTTP metrics; null when none are kept. */
  metrics: Metrics | null;
  isShuttingDown(): boolean;
}

/** The routes of both APIs: probes, HTTPS policy, limits, validation, the operations' handlers, the error envelope. */
function apiRoutes({ config, services, merged, validator, limits, logger, metrics, isShuttingDown }: HttpParts): Router {
  const limited = (handler: RequestHandler): RequestHandler[] => (config.rateLimitsEnabled ? [handler] : []);
  // Failed authentications per client address: counted on POST /auth/token (which it blocks once
  // used up) and, through the error middleware, on every 401 of the other operations.
  const authFailures = failureLimit({ store: limits, name: 'auth-failures', key: clientKey, ...AUTH_FAILURES });
  const bearer = requireBearer(services.tokens, services.store);
  const accountLimit = rateLimit({
    store: limits,
    name: 'account',
    key: (_req, res) => authOf(res).accountId,
    limit: (_req, res) => planLimit(authOf(res).plan),
    windowMs: ACCOUNT_WINDOW_MS,
  });
  const toolLimit = (name: string, limit: { limit: number; windowMs: number }): RequestHandler =>
    rateLimit({ store: limits, name: `tools-${name}`, key: clientKey, ...limit });

  const context = (req: Request, res: Response): RequestContext => ({
    requestId: requestIdOf(res),
    auth: maybeAuthOf(res),
    clientIp: clientAddress(req),
    userAgent: req.get('user-agent') ?? null,
    services,
  });

  const router = Router({ caseSensitive: true, strict: true });
  const routed = [
    ...Object.entries(backupOperations).map(([operationId, op]) => ({ operationId, method: op.method, path: backupBasePath + op.path })),
    ...Object.entries(toolsOperations).map(([operationId, op]) => ({ operationId, method: op.method, path: toolsBasePath + op.path })),
  ];
  const operations = operationIndex(routed);
  const operationOf = operationLookup(operations);
  // The probes answer until the process exits: /livez 200, /readyz 503 from the start of shutdown.
  const probePaths = new Set(PROBE_OPERATIONS.map((id) => toolsBasePath + toolsOperations[id].path));

  const crossOrigin = cors(config.corsOrigins);
  if (crossOrigin) router.use(crossOrigin);
  router.use(requestId());
  router.use(requestLogger(logger, probePaths, metrics?.http(operations)));
  router.use(httpsPolicy(probePaths));
  router.use((req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (isShuttingDown() && !probePaths.has(req.path)) {
      res.setHeader('Connection', 'close');
      next(new ApiError('SERVICE_UNAVAILABLE', 'The server is shutting down; retry shortly.', {}, { 'Retry-After': '5' }));
      return;
    }
    next();
  });
  // Each operation's chain, in the order of `routed` (the numbering of `operations`).
  const jsonBodies = jsonBody();
  const body = (path: string, method: string) => (takesBody(merged, path, method) ? jsonBodies : []);
  const chains = new Map<string, RequestHandler[]>();
  for (const [operationId, op] of Object.entries(backupOperations)) {
    const chain: RequestHandler[] = [];
    if (operationId === 'createToken') {
      chain.push(
        ...limited(rateLimit({ store: limits, name: 'auth-token', key: clientKey, ...TOKEN_REQUESTS })),
        ...limited(authFailures.guard),
      );
    } else if (op.security.length > 0) {
      chain.push(bearer, ...limited(accountLimit));
    }
    const handler = backupHandlers[operationId as keyof typeof backupHandlers];
    chains.set(operationId, [...chain, ...body(backupBasePath + op.path, op.method), ...validator(op.method, backupBasePath + op.path), handlerRoute(handler, context)]);
  }
  for (const [operationId, op] of Object.entries(toolsOperations)) {
    const id = operationId as keyof typeof toolsOperations;
    const limit = TOOL_LIMITS[id]; // none for the probes (x-rate-limit-exempt)
    chains.set(operationId, [
      ...(limit === undefined ? [] : limited(toolLimit(id, limit))),
      ...body(toolsBasePath + op.path, op.method),
      ...validator(op.method, toolsBasePath + op.path),
      handlerRoute(toolsHandlers[id], context),
    ]);
  }
  router.use(dispatcher(routed.map((op) => ({ method: op.method, path: op.path, chain: chains.get(op.operationId)! })), operations.choose));
  router.use((_req, _res, next) => next(new ApiError('NOT_FOUND', 'No such resource.')));
  if (config.rateLimitsEnabled) router.use(authFailures.countErrors);
  router.use(reportRefusals(services.events, operationOf));
  router.use(errorHandler(logger));
  return router;
}

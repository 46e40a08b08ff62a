import { mkdirSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import { backupBasePath, backupOperations } from '../generated/backup-handlers.ts';
import { toolsBasePath, toolsOperations } from '../generated/tools-handlers.ts';
import { ensureStartupKey, type StartupKeyOutcome } from './auth/api-keys.ts';
import { requireBearer } from './auth/middleware.ts';
import { TokenService } from './auth/tokens.ts';
import { backupHandlers } from './backup-api/index.ts';
import type { Config } from './config.ts';
import type { RequestContext, Services } from './context.ts';
import { clientAddress, clientKey } from './http/client-address.ts';
import { cors } from './http/cors.ts';
import { ApiError } from './http/errors.ts';
import { errorHandler } from './http/error-handler.ts';
import { jsonBody } from './http/json-body.ts';
import { authOf, maybeAuthOf, requestIdOf } from './http/locals.ts';
import { createLogger, requestLogger } from './http/logger.ts';
import { GENERATED_DIR, loadDocument, mergeDocuments, openApiValidator, takesBody } from './http/openapi.ts';
import { httpsPolicy } from './http/https-policy.ts';
import { listen } from './http/listen.ts';
import { handlerRoute } from './http/operation-route.ts';
import { failureLimit, rateLimit } from './http/rate-limit.ts';
import { requestId } from './http/request-id.ts';
import { routeGuard } from './http/route-guard.ts';
import { JobQueue } from './jobs/queue.ts';
import { repositoryLockKey, repositorySecret } from './jobs/repositories.ts';
import { createJobRunner } from './jobs/runners.ts';
import { ACCOUNT_WINDOW_MS, AUTH_FAILURES, planLimit, TOKEN_REQUESTS, TOOL_LIMITS } from './ratelimit/limits.ts';
import { openRateLimitStore } from './ratelimit/select.ts';
import type { RateLimitStore } from './ratelimit/store.ts';
import { loadOrCreateSecret } from './secrets.ts';
import { Store } from './store/index.ts';
import { ServerCertificate } from './tls/server-certificate.ts';
import { toolsHandlers } from './tools-api/index.ts';
import { targetPolicy } from './tools-api/net/target-policy.ts';

export interface AppOptions {
  logger?: Logger;
  /** Where the bundled OpenAPI documents are read from (default generated/). */
  specDir?: string;
  /** Check-site overrides for tests (a resolver, a CA); the policy follows the config. */
  siteCheck?: Partial<Services['siteCheck']>;
  ipInfo?: Services['ipInfo'];
  rateLimitStore?: RateLimitStore;
}

export interface BackupServiceApp {
  app: Express;
  services: Services;
  /** What start-up did about keys: the caller prints a new development key once. */
  startupKey: StartupKeyOutcome;
  recovered: { interrupted: string[]; requeued: number };
  listen(port?: number, host?: string): Promise<Server>;
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
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const store = Store.open(config.dataDir);
  const tokens = new TokenService(loadOrCreateSecret(config.dataDir, 'token-signing-key', 32));
  const startupKey = await ensureStartupKey(store, config.bootstrap);

  const run = createJobRunner({
    store,
    dataDir: config.dataDir,
    allowedRoots: config.allowedRoots,
    secret: repositorySecret(config.dataDir, config.repositoryPassword),
    logger,
  });
  const queue = new JobQueue({ store, run, logger, concurrency: config.jobConcurrency });
  const recovery = store.jobs.recover();
  for (const { kind, id } of recovery.queued) {
    const job = kind === 'backup' ? store.jobs.getBackup(id) : store.jobs.getRestore(id);
    if (!job) continue;
    const destination = 'destination' in job ? job.destination : (store.jobs.getBackup(job.backupId)?.destination ?? 'cloud');
    queue.enqueue(kind, id, repositoryLockKey(job.accountId, destination));
  }
  if (recovery.interrupted.length || recovery.queued.length) {
    logger.warn({ interrupted: recovery.interrupted, requeued: recovery.queued.length }, 'recovered jobs left by the previous run');
  }

  const services: Services = {
    config,
    store,
    tokens,
    queue,
    logger,
    startedAt: Date.now(),
    version: packageVersion(),
    siteCheck: { policy: targetPolicy({ allowPrivate: config.checkSiteAllowPrivate }), ...options.siteCheck },
    ipInfo: options.ipInfo ?? {},
    certificate: config.tls ? new ServerCertificate(config.tls, logger) : undefined,
  };

  const specDir = options.specDir ?? GENERATED_DIR;
  const merged = mergeDocuments([
    { doc: loadDocument(specDir, 'backup'), basePath: backupBasePath },
    { doc: loadDocument(specDir, 'tools'), basePath: toolsBasePath },
  ]);
  const validator = openApiValidator(merged, config.validateResponses);
  const limits = options.rateLimitStore ?? (await openRateLimitStore(config.redisUrl, logger));
  const limited = (handler: RequestHandler): RequestHandler[] => (config.rateLimitsEnabled ? [handler] : []);
  // Failed authentications per client address: counted on POST /auth/token (which it blocks once
  // used up) and, through the error middleware, on every 401 of the other operations.
  const authFailures = failureLimit({ store: limits, name: 'auth-failures', key: clientKey, ...AUTH_FAILURES });
  const bearer = requireBearer(tokens, store);
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

  let shuttingDown = false;
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.set('etag', false);

  app.use(cors(config.corsOrigins));
  app.use(requestId());
  app.use(requestLogger(logger));
  app.use(httpsPolicy());
  app.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (shuttingDown) {
      res.setHeader('Connection', 'close');
      next(new ApiError('SERVICE_UNAVAILABLE', 'The server is shutting down; retry shortly.', {}, { 'Retry-After': '5' }));
      return;
    }
    next();
  });
  app.use(
    routeGuard([
      ...Object.values(backupOperations).map((op) => ({ method: op.method, path: backupBasePath + op.path })),
      ...Object.values(toolsOperations).map((op) => ({ method: op.method, path: toolsBasePath + op.path })),
    ]),
  );

  const jsonBodies = jsonBody();
  const body = (path: string, method: string) => (takesBody(merged, path, method) ? jsonBodies : []);
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
    app[op.method](backupBasePath + op.expressPath, ...chain, ...body(backupBasePath + op.path, op.method), ...validator, handlerRoute(handler, context));
  }
  for (const [operationId, op] of Object.entries(toolsOperations)) {
    const id = operationId as keyof typeof toolsOperations;
    app[op.method](
      toolsBasePath + op.expressPath,
      ...limited(toolLimit(id, TOOL_LIMITS[id])),
      ...body(toolsBasePath + op.path, op.method),
      ...validator,
      handlerRoute(toolsHandlers[id], context),
    );
  }
  app.use((_req, _res, next) => next(new ApiError('NOT_FOUND', 'No such resource.')));
  if (config.rateLimitsEnabled) app.use(authFailures.countErrors);
  app.use(errorHandler(logger));

  let server: Server | undefined;
  return {
    app,
    services,
    startupKey,
    recovered: { interrupted: recovery.interrupted, requeued: recovery.queued.length },
    async listen(port = config.port, host = config.host) {
      server = await listen(app, { port, host, certificate: services.certificate });
      return server;
    },
    async close() {
      if (shuttingDown) return;
      shuttingDown = true;
      const closed = server
        ? new Promise<void>((resolve) => {
            server!.close(() => resolve());
            server!.closeIdleConnections();
          })
        : Promise.resolve();
      // Jobs and in-flight requests share one SHUTDOWN_TIMEOUT_MS, so the whole stop is bounded by it.
      const timer = setTimeout(() => server?.closeAllConnections(), config.shutdownTimeoutMs);
      await queue.close(config.shutdownTimeoutMs);
      await closed;
      clearTimeout(timer);
      if (!options.rateLimitStore) await limits.close?.();
      services.certificate?.close();
      store.close();
    },
  };
}

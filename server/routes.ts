/**
 * The routes of both APIs, built from what they run against (HttpParts): the service's own state
 * (app.ts) or a warm-up's throwaway copy (server/warm-up).
 */
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { backupBasePath, backupOperations } from '../generated/backup-handlers.ts';
import { toolsBasePath, toolsOperations } from '../generated/tools-handlers.ts';
import { requireBearer } from './auth/middleware.ts';
import { backupHandlers } from './backup-api/index.ts';
import type { RequestContext, Services } from './context.ts';
import { clientAddress, clientKey } from './http/client-address.ts';
import { cors } from './http/cors.ts';
import { dispatcher } from './http/dispatch.ts';
import { errorHandler } from './http/error-handler.ts';
import { ApiError } from './http/errors.ts';
import { httpsPolicy } from './http/https-policy.ts';
import { jsonBody } from './http/json-body.ts';
import { authOf, maybeAuthOf, requestIdOf } from './http/locals.ts';
import { requestLogger } from './http/logger.ts';
import { takesBody, type OpenApiDocument, type OperationValidator } from './http/openapi.ts';
import { operationIndex, operationLookup } from './http/operation-of.ts';
import { handlerRoute } from './http/operation-route.ts';
import { failureLimit, rateLimit } from './http/rate-limit.ts';
import { reportRefusals } from './http/refusals.ts';
import { requestId } from './http/request-id.ts';
import type { Metrics } from './metrics/index.ts';
import { PROBE_OPERATIONS } from './probes/index.ts';
import { ACCOUNT_WINDOW_MS, AUTH_FAILURES, planLimit, TOKEN_REQUESTS, TOOL_LIMITS } from './ratelimit/limits.ts';
import type { RateLimitStore } from './ratelimit/store.ts';
import { toolsHandlers } from './tools-api/index.ts';

/** What the routes are built from. */
export interface HttpParts {
  /** Their settings and logger too (`config`, `logger`). */
  services: Services;
  /** Both bundled documents, merged. */
  merged: OpenApiDocument;
  validator: OperationValidator;
  limits: RateLimitStore;
  /** The HTTP metrics; null when none are kept. */
  metrics: Metrics | null;
  isShuttingDown(): boolean;
}

/** The routes of both APIs: probes, HTTPS policy, limits, validation, the operations' handlers, the error envelope. */
export function apiRoutes({ services, merged, validator, limits, metrics, isShuttingDown }: HttpParts): Router {
  const { config, logger } = services;
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

  // For Express's own routing; the operations are matched exactly by the dispatcher (server/http/dispatch.ts).
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

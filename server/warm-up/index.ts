/**
 * Warm-up before the service listens. V8 runs a new process's code in its interpreter until it
 * has seen it often enough to compile it. On two shared cores, 200 clients arriving at once on a
 * freshly started instance waited over a second for their first answers; 1,000 requests sent
 * beforehand took that away (docs/performance.md, "Tools API: the first round after a start").
 *
 * So before `listen`, a worker thread (./client.ts) sends WARM_UP_REQUESTS requests of the public
 * tools API to the service's own Express app on a private loopback port. The app sends the
 * requests of that port to a second set of routes built by the same code (`apiRoutes` in routes.ts)
 * from throwaway state:
 * - a SQLite store in a temporary directory, removed afterwards;
 * - in-memory rate limits;
 * - a log that goes to /dev/null, metrics of their own (when the service keeps metrics), and
 *   events that only those metrics observe (no audit lines);
 * - a check-site policy that admits only the worker's own site.
 * Nothing of the service's own state sees a warm-up request. One app, because Express gives each
 * app its own prototypes of request and response: code compiled for another app's would be thrown
 * away at the first real request. The client runs in a worker so that its code does not share
 * the main thread's type feedback.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { RequestListener, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { HttpParts } from '../routes.ts';
import { workerEnv } from '../compile-cache.ts';
import { createServiceEvents } from '../events.ts';
import { listen } from '../http/listen.ts';
import { batchedDestination, createLogger } from '../http/logger.ts';
import { MemoryRateLimitStore } from '../ratelimit/store.ts';
import { openStore, type Store } from '../store/index.ts';
import { onlyTargets } from '../tools-api/net/target-policy.ts';
import type { WarmUpPlan, WarmUpReport } from './client.ts';

/** The whole warm-up is given up after this long (check-site's own timeout is 10 s). */
const WARM_UP_TIMEOUT_MS = 60_000;

export type { WarmUpReport };

/** Sends `requests` requests to what `build` serves from a throwaway copy of `parts`. */
export async function warmUp(requests: number, parts: HttpParts, build: (parts: HttpParts) => RequestListener): Promise<WarmUpReport> {
  const stop = new AbortController();
  const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(WARM_UP_TIMEOUT_MS)]);
  const dir = mkdtempSync(join(tmpdir(), 'backup-warm-up-'));
  // The log's lines take the path the service's take (pino, the batched writes), to /dev/null.
  const log = batchedDestination('/dev/null');
  const logger = createLogger(parts.services.config.logLevel, log);
  const plan: WarmUpPlan = { requests };
  const worker = new Worker(new URL('./client.ts', import.meta.url), { workerData: plan, env: workerEnv() });
  const exited = once(worker, 'exit', { signal }).then(([code]) => {
    throw new Error(`the warm-up's client stopped (exit code ${String(code)})`);
  });
  // Raced by next(); once the warm-up is over (or failed before asking), its rejection is expected.
  exited.catch(() => undefined);
  /** The client's next message; rejects when it fails or stops first, or the time is up. */
  const next = async <T>(): Promise<T> => (await Promise.race([once(worker, 'message', { signal }), exited]))[0] as T;
  let store: Store | undefined;
  let server: Server | undefined;
  try {
    store = await openStore({ dataDir: dir, databaseUrl: null }, { exclusive: true });
    const sitePort = await next<number>();
    const events = createServiceEvents();
    // Metrics of its own when the service keeps them: their code is on every request's path.
    const metrics = parts.metrics ? new (await import('../metrics/index.ts')).Metrics(logger, { processMetrics: false }) : null;
    metrics?.observe(events);
    const services = {
      ...parts.services,
      store,
      logger,
      events,
      siteCheck: { ...parts.services.siteCheck, policy: onlyTargets([{ address: '127.0.0.1', port: sitePort }]) },
    };
    server = await listen(build({ ...parts, services, limits: new MemoryRateLimitStore(), metrics, isShuttingDown: () => false }), { port: 0, host: '127.0.0.1' });
    worker.postMessage((server.address() as { port: number }).port);
    return await next<WarmUpReport>();
  } finally {
    stop.abort();
    server?.closeAllConnections();
    server?.close();
    await worker.terminate();
    await store?.close();
    log.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * How the running server reacts to its process environment:
 *
 * - SIGTERM / SIGINT: graceful stop (readiness off and SHUTDOWN_DRAIN_MS of serving, then no new
 *   requests, running jobs recorded INTERRUPTED, in-flight requests given SHUTDOWN_TIMEOUT_MS),
 *   then exit 0. Whatever still hangs 4 s after that is cut by exiting 1, so the process is gone
 *   within SHUTDOWN_DRAIN_MS + SHUTDOWN_TIMEOUT_MS + 5 s.
 * - When started by an npm script (`npm start`), the npm process is the parent: if it goes away
 *   (killed, or it did not pass the signal on), the server stops the same way, never orphaned.
 * - SIGHUP: read the TLS certificate files again now, instead of at the next periodic check.
 */
import type { Logger } from 'pino';
import type { BackupServiceApp } from './app.ts';

/** Grace beyond SHUTDOWN_TIMEOUT_MS before the process exits whatever is still running. */
const HARD_STOP_GRACE_MS = 4000;
const PARENT_CHECK_MS = 1000;

export function handleSignals(service: BackupServiceApp, logger: Logger): void {
  const { shutdownTimeoutMs, shutdownDrainMs } = service.services.config;
  const limitMs = shutdownDrainMs + shutdownTimeoutMs + HARD_STOP_GRACE_MS;
  let stopping = false;
  const stop = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      logger.error({ after_ms: limitMs }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, limitMs).unref();
    logger.info({ reason }, 'shutting down');
    service.close().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => {
    const certificate = service.services.certificate;
    if (certificate) void certificate.reload('SIGHUP', true);
    else logger.info('SIGHUP: no TLS certificate to reload');
  });

  if (process.env.npm_lifecycle_event) {
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) stop(`parent process ${parent} (npm) is gone`);
    }, PARENT_CHECK_MS).unref();
  }
}

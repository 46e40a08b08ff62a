// The server process: loads the settings, builds the app, listens (started by main.ts).
import { createApp } from './app.ts';
import { auditRefusedSettings } from './audit/refused-settings.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './http/logger.ts';
import { handleSignals } from './signals.ts';
import { EXIT, startRefusal } from './start-refusal.ts';

/** Settings that cannot work stop the start: exit 78 (EX_CONFIG) with the message, and an audit line (as for a shared secret that differs). */
function refuse(err: unknown): never {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`Configuration error: ${err.message}\n`);
  auditRefusedSettings(err.message, process.env, process.cwd());
  process.exit(78);
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    refuse(err);
  }
  const logger = createLogger(config.logLevel);
  let service;
  try {
    service = await createApp(config, { logger });
  } catch (err) {
    if (err instanceof ConfigError) refuse(err);
    const refusal = startRefusal(err);
    if (!refusal) throw err;
    process.stderr.write(`${refusal.message}
`);
    if (refusal.code === EXIT.secretMismatch) auditRefusedSettings((err as Error).message, process.env, process.cwd());
    process.exit(refusal.code);
  }

  if (service.startupKey.kind === 'development') {
    const { apiKey, secret, plan } = service.startupKey.key;
    // Printed once, to the terminal only (not the JSON log): the secret is never shown again.
    process.stdout.write(
      [
        '',
        'No API key existed, so a development key was created (shown only this once):',
        `  api_key: ${apiKey}`,
        `  secret:  ${secret}`,
        `  plan:    ${plan}`,
        'Manage keys with `npm run keys -- create|list|revoke`.',
        '',
      ].join('\n') + '\n',
    );
  } else if (service.startupKey.kind === 'bootstrap' && service.startupKey.revoked) {
    logger.warn({ api_key: service.startupKey.apiKey }, 'the bootstrap API key is revoked; it stays revoked');
  }

  if (config.warmUpRequests > 0) {
    // A warm-up that fails costs only its benefit: the service starts all the same.
    await service.warmUp().then(
      (report) => logger.info({ warm_up: report }, 'warmed up'),
      (err: unknown) => logger.warn({ err }, 'warm-up failed; serving without it'),
    );
  }
  // Before the "listening" line: a supervisor may signal as soon as it sees it.
  handleSignals(service, logger);
  const server = await service.listen();
  const metricsServer = await service.listenMetrics();
  const portOf = (s: typeof server | null): number | null => {
    const address = s?.address();
    return typeof address === 'object' && address ? address.port : null;
  };
  logger.info(
    { port: portOf(server) ?? config.port, metrics_port: portOf(metricsServer), host: config.host, tls: config.tls !== null, data_dir: config.dataDir, allowed_roots: config.allowedRoots },
    'backup service listening',
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`Failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

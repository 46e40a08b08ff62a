// `npm start`: both APIs on one port (PORT, default 8080), data in DATA_DIR (default ./data).
import { createApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './http/logger.ts';
import { handleSignals } from './signals.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(78);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const service = await createApp(config, { logger });

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

  const server = await service.listen();
  const address = server.address();
  logger.info(
    { port: typeof address === 'object' && address ? address.port : config.port, host: config.host, tls: config.tls !== null, data_dir: config.dataDir, allowed_roots: config.allowedRoots },
    'backup service listening',
  );
  handleSignals(service, logger);
}

main().catch((err: unknown) => {
  process.stderr.write(`Failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

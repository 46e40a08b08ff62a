/**
 * `npm run mock`: the Backup API mock on port 4010 (http://127.0.0.1:4010/api/v1/...) and the
 * public tools mock on 4011 (http://127.0.0.1:4011/api/...), from generated/*.openapi.json.
 *   npm run mock [-- --backup-port 4010 --tools-port 4011 --host 127.0.0.1 --job-seconds 5
 *                   --plan pro --token-seconds 900 --allowed-root /home --dynamic --quiet]
 */
import { parseArgs } from 'node:util';
import { RESET_PATH, startMock } from './start.ts';

const { values } = parseArgs({
  options: {
    'backup-port': { type: 'string', default: '4010' },
    'tools-port': { type: 'string', default: '4011' },
    host: { type: 'string', default: '127.0.0.1' },
    'job-seconds': { type: 'string', default: '5' },
    plan: { type: 'string', default: 'pro' },
    'token-seconds': { type: 'string', default: '900' },
    'allowed-root': { type: 'string', multiple: true },
    dynamic: { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
  },
});

function number(name: string, raw: string): number {
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    process.stderr.write(`--${name} must be a number of seconds, got "${raw}"\n`);
    process.exit(64);
  }
  return value;
}

const mock = await startMock({
  backupPort: Number(values['backup-port']),
  toolsPort: Number(values['tools-port']),
  host: values.host,
  jobSeconds: number('job-seconds', values['job-seconds']),
  plan: values.plan,
  tokenSeconds: number('token-seconds', values['token-seconds']),
  ...(values['allowed-root'] ? { allowedRoots: values['allowed-root'] } : {}),
  dynamic: values.dynamic,
  log: values.quiet
    ? undefined
    : (api, level, message) => {
        // Prism narrates every step at info; keep the answers, warnings and violations.
        if (level === 'info' && !message.startsWith('Responding with')) return;
        process.stdout.write(`[${api}] ${level.padEnd(5)} ${message}\n`);
      },
});

process.stdout.write(
  `Backup API mock:   ${mock.backupUrl}\nPublic tools mock: ${mock.toolsUrl}\n` +
    `Any API key and secret get a token; jobs take ${values['job-seconds']} s. ` +
    `"Prefer: example=<name>" answers that example; POST ${RESET_PATH} forgets all state. Ctrl-C stops.\n`,
);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void mock.close().then(() => process.exit(0));
  });
}

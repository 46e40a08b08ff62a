/**
 * `npm run mock`: the Backup API mock on port 4010 (http://127.0.0.1:4010/api/v1/...) and the
 * public tools mock on 4011 (http://127.0.0.1:4011/api/...), from generated/*.openapi.json.
 *   npm run mock [-- --backup-port 4010 --tools-port 4011 --host 127.0.0.1 --dynamic --quiet]
 */
import { parseArgs } from 'node:util';
import { startMock } from './start.ts';

const { values } = parseArgs({
  options: {
    'backup-port': { type: 'string', default: '4010' },
    'tools-port': { type: 'string', default: '4011' },
    host: { type: 'string', default: '127.0.0.1' },
    dynamic: { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
  },
});

const mock = await startMock({
  backupPort: Number(values['backup-port']),
  toolsPort: Number(values['tools-port']),
  host: values.host,
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
    `Pick an example with "Prefer: example=<name>", generated data with "Prefer: dynamic=true". Ctrl-C stops.\n`,
);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void mock.close().then(() => process.exit(0));
  });
}

// `npm run keys -- create [--plan free_trial|pro|business] [--account acc_…] [--label text]`
// `npm run keys -- list`
// `npm run keys -- revoke key_…`
// The stand-in for the desktop application's settings page; works on DATA_DIR like the server.
import { parseArgs } from 'node:util';
import { createApiKey } from './auth/api-keys.ts';
import { ConfigError, loadConfig, PLANS, type Plan } from './config.ts';
import { Store } from './store/index.ts';

const USAGE = `Usage:
  npm run keys -- create [--plan free_trial|pro|business] [--account acc_…] [--label text]
  npm run keys -- list
  npm run keys -- revoke key_…`;

export async function runKeysCli(argv: string[], env: NodeJS.ProcessEnv, out: (line: string) => void): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { plan: { type: 'string' }, account: { type: 'string' }, label: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    out(USAGE);
    return command || values.help ? 0 : 64;
  }
  const config = loadConfig(env);
  const store = Store.open(config.dataDir);
  try {
    switch (command) {
      case 'create': {
        const plan = (values.plan ?? 'free_trial') as Plan;
        if (!PLANS.includes(plan)) {
          out(`Unknown plan "${values.plan}"; one of ${PLANS.join(', ')}.`);
          return 64;
        }
        const key = await createApiKey(store, { plan, ...(values.account ? { accountId: values.account } : {}), ...(values.label ? { label: values.label } : {}) });
        out(`api_key: ${key.apiKey}`);
        out(`secret:  ${key.secret}`);
        out(`account: ${key.accountId} (plan ${key.plan})`);
        out('The secret is shown only now; store it safely.');
        return 0;
      }
      case 'list': {
        const keys = store.accounts.listKeys();
        if (keys.length === 0) out('No API keys.');
        for (const k of keys) {
          out([k.id, k.accountId, k.plan, k.revokedAt ? `revoked ${k.revokedAt}` : 'active', `created ${k.createdAt}`, k.label ?? ''].join('\t').trimEnd());
        }
        return 0;
      }
      case 'revoke': {
        const id = rest[0];
        if (!id) {
          out(USAGE);
          return 64;
        }
        if (!store.accounts.revokeKey(id)) {
          out(`No API key ${id}.`);
          return 1;
        }
        out(`Revoked ${id}; tokens issued for it stop working at once.`);
        return 0;
      }
      default:
        out(USAGE);
        return 64;
    }
  } catch (err) {
    out(err instanceof Error ? err.message : String(err));
    return 1;
  } finally {
    store.close();
  }
}

if (import.meta.main) {
  runKeysCli(process.argv.slice(2), process.env, (line) => process.stdout.write(line + '\n')).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof ConfigError ? 'Configuration error: ' : ''}${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(err instanceof ConfigError ? 78 : 1);
    },
  );
}

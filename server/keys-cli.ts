// `npm run keys -- create [--plan free_trial|pro|business] [--account acc_…] [--label text]`
// `npm run keys -- list`
// `npm run keys -- revoke key_…`
// `npm run keys -- rotate-master`
// The stand-in for the desktop application's settings page; works on the server's store (DATA_DIR,
// or DATABASE_URL) while the server runs. rotate-master needs every server stopped.
import { parseArgs } from 'node:util';
import { AuditLog } from './audit/log.ts';
import { auditServiceEvents } from './audit/observer.ts';
import { createApiKey } from './auth/api-keys.ts';
import { KEY_CHANGES_SEEN_WITHIN_MS } from './auth/key-cache.ts';
import { ConfigError, loadConfig, PLANS, type Plan } from './config.ts';
import { createServiceEvents } from './events.ts';
import { createLogger } from './http/logger.ts';
import { rotateMasterKey } from './keys/rotate.ts';
import { DataDirLockedError, openStore } from './store/index.ts';

const USAGE = `Usage:
  npm run keys -- create [--plan free_trial|pro|business] [--account acc_…] [--label text]
  npm run keys -- list
  npm run keys -- revoke key_…
  npm run keys -- rotate-master   (every server stopped first)`;

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
  let store;
  try {
    // Rotation takes DATA_DIR's server lock (embedded): no server may run on the old key meanwhile.
    store = await openStore(config, { exclusive: command === 'rotate-master' });
  } catch (err) {
    if (!(err instanceof DataDirLockedError)) throw err;
    out(`${err.message} The master key can be rotated only while no server runs.`);
    return 75;
  }
  // Key changes go to the audit log the server writes (AUDIT_LOG), as the server's own do.
  const audit = AuditLog.open(config.audit);
  const events = createServiceEvents();
  auditServiceEvents(events, audit, createLogger('error', process.stderr));
  try {
    switch (command) {
      case 'create': {
        const plan = (values.plan ?? 'free_trial') as Plan;
        if (!PLANS.includes(plan)) {
          out(`Unknown plan "${values.plan}"; one of ${PLANS.join(', ')}.`);
          return 64;
        }
        const key = await createApiKey(store, { plan, ...(values.account ? { accountId: values.account } : {}), ...(values.label ? { label: values.label } : {}) });
        events.emit('key.created', { accountId: key.accountId, keyId: key.apiKey, plan: key.plan, via: 'cli' });
        out(`api_key: ${key.apiKey}`);
        out(`secret:  ${key.secret}`);
        out(`account: ${key.accountId} (plan ${key.plan})`);
        out('The secret is shown only now; store it safely.');
        return 0;
      }
      case 'list': {
        const keys = await store.accounts.listKeys();
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
        const key = await store.accounts.getKey(id);
        if (!key || !(await store.accounts.revokeKey(id))) {
          out(`No API key ${id}.`);
          return 1;
        }
        if (!key.revokedAt) events.emit('key.revoked', { accountId: key.accountId, keyId: id, via: 'cli' });
        // Every running server has dropped the key from its cache once this has passed.
        await new Promise((resolve) => setTimeout(resolve, KEY_CHANGES_SEEN_WITHIN_MS + 100));
        out(`Revoked ${id}; tokens issued for it stop working at once.`);
        return 0;
      }
      case 'rotate-master': {
        const { rewrapped, file } = await rotateMasterKey(store, config.keys);
        events.emit('master_key.rotated', { rewrapped, via: 'cli' });
        out(`Rotated the master key in ${file}: ${rewrapped} repository keys rewrapped, no data rewritten.`);
        out('Give every server the new key file before starting it again.');
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
    await store.close();
    audit.close();
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

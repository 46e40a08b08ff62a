/**
 * `npm run test:contract`: every contract check against the real server (and Dredd against the
 * mock too), each on fresh processes on ephemeral loopback ports; prints one pass/fail line per
 * check, the coverage table, and exits non-zero on any failure.
 *
 *   node contract-tests/run.ts [--only name,name] [--keep] [--concurrency N]
 *     --only   run just these checks (dredd-real, dredd-mock, prism-proxy, arazzo, fuzz, https, self-test)
 *     --keep   keep the temporary directory (logs, data) even when everything passes
 *     --concurrency N   run up to N checks at once (default 3; the longest start first)
 *     --tamper meta-type|status-code|drop-header
 *              put the tampering proxy (tamper/proxy.ts) in front of every real server: the
 *              run must then fail, showing a non-conforming answer is caught
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { arazzoCheck } from './arazzo/run.ts';
import type { CheckResult, Context } from './lib/check.ts';
import { concurrently } from './lib/concurrently.ts';
import { Coverage } from './lib/coverage.ts';
import { loadApi, ResponseValidator } from './lib/spec.ts';
import { ROOT, startMockServers, startServer, startTargetSite, WORK } from './lib/stack.ts';
import { unreachableWhy } from './lib/unreachable.ts';
import { dreddCheck } from './dredd/run.ts';
import { fuzzCheck } from './fuzz/run.ts';
import { httpsCheck } from './https/run.ts';
import { prismProxyCheck } from './prism/run.ts';
import { startTamperProxy, type Tamper } from './tamper/proxy.ts';
import { selfTestCheck } from './tamper/run.ts';

const { values } = parseArgs({ options: { only: { type: 'string' }, keep: { type: 'boolean', default: false }, tamper: { type: 'string' }, concurrency: { type: 'string', default: '3' } } });
const tamper = values.tamper as Tamper | undefined;
const only = values.only ? new Set(values.only.split(',')) : undefined;
const CONCURRENCY = Number(values.concurrency);
if (!Number.isInteger(CONCURRENCY) || CONCURRENCY < 1) throw new Error(`--concurrency must be a whole number of at least 1, not "${values.concurrency}"`);

const apis = [loadApi(ROOT, 'backup'), loadApi(ROOT, 'tools')];
const coverage = new Coverage();
const site = await startTargetSite();
const ctx: Context = { apis, validator: new ResponseValidator(apis), coverage, siteOrigin: site.origin };

type Check = { name: string; run: () => Promise<CheckResult> };

/** Runs fn with a fresh real server, stopping it whatever happens. */
async function withServer(name: string, env: Record<string, string>, fn: (s: Awaited<ReturnType<typeof startServer>>) => Promise<CheckResult>): Promise<CheckResult> {
  const server = await startServer(name, env);
  const proxy = tamper ? await startTamperProxy(server.origin, tamper) : undefined;
  try {
    const result = await fn(proxy ? { ...server, origin: proxy.origin, backupBase: `${proxy.origin}/api/v1` } : server);
    if (!result.ok) result.failures.push(`server log: ${server.logFile}`);
    return result;
  } finally {
    await proxy?.stop();
    await server.stop();
  }
}

// The longest first, so the run ends soon after the last one starts.
const checks: Check[] = [
  { name: 'self-test', run: () => selfTestCheck(ctx) },
  { name: 'https', run: () => httpsCheck(ctx) },
  {
    name: 'dredd-real',
    run: () =>
      withServer('dredd-real', { TRUST_PROXY: 'loopback' }, (s) =>
        dreddCheck('dredd-real', ctx, { kind: 'real', backupOrigin: s.origin, toolsOrigin: s.origin, allowedRoot: s.allowedRoot, source: s.source, bigSource: s.bigSource }),
      ),
  },
  {
    name: 'dredd-mock',
    run: async () => {
      const mock = await startMockServers();
      try {
        return await dreddCheck('dredd-mock', ctx, { kind: 'mock', backupOrigin: mock.backupOrigin, toolsOrigin: mock.toolsOrigin });
      } finally {
        await mock.stop();
      }
    },
  },
  { name: 'prism-proxy', run: () => withServer('prism-proxy', { BACKUP_BOOTSTRAP_PLAN: 'free_trial', TRUST_PROXY: 'loopback' }, (s) => prismProxyCheck(ctx, s)) },
  { name: 'arazzo', run: () => withServer('arazzo', {}, (s) => arazzoCheck(ctx, s)) },
  { name: 'fuzz', run: () => withServer('fuzz', { TRUST_PROXY: 'loopback' }, (s) => fuzzCheck(ctx, s)) },
];

const started = Date.now();
let results: CheckResult[] = [];
try {
  const selected = checks.filter((check) => !only || only.has(check.name));
  results = await concurrently(
    selected.map((check) => async () => {
      const t0 = Date.now();
      let result: CheckResult;
      try {
        result = await check.run();
      } catch (err) {
        result = { name: check.name, ok: false, summary: 'crashed', failures: [(err as Error).stack ?? String(err)] };
      }
      const secs = ((Date.now() - t0) / 1000).toFixed(1);
      console.log(`${result.ok ? 'PASS' : 'FAIL'} ${result.name} (${secs} s): ${result.summary}`);
      for (const f of result.failures.slice(0, 40)) console.log(`     ✗ ${f}`);
      if (result.failures.length > 40) console.log(`     … ${result.failures.length - 40} more`);
      if (process.env.CONTRACT_VERBOSE) for (const n of result.notes ?? []) console.log(`     · ${n}`);
      return result;
    }),
    CONCURRENCY,
  );
} finally {
  await site.stop();
}

const table = coverage.table(apis, unreachableWhy, ['dredd-mock']);
writeFileSync(join(WORK, 'coverage.md'), table + '\n');
writeFileSync(join(WORK, 'coverage.json'), JSON.stringify(coverage.toJSON(), null, 2));
console.log('\nCoverage (documented operation × response reached with a conforming answer):\n');
console.log(table);
const failed = results.filter((r) => !r.ok);
const secs = ((Date.now() - started) / 1000).toFixed(1);
console.log(`\n${failed.length === 0 ? 'PASS' : 'FAIL'}: ${results.length - failed.length}/${results.length} contract checks passed in ${secs} s${failed.length ? ` (failed: ${failed.map((r) => r.name).join(', ')})` : ''}`);
if (failed.length === 0 && !values.keep) rmSync(WORK, { recursive: true, force: true });
else console.log(`logs and data: ${WORK}`);
// The plain closing line CI reads.
console.log(`contract: ${results.length - failed.length} passed, ${failed.length} failed`);
process.exitCode = failed.length === 0 ? 0 : 1;

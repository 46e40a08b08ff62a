/**
 * The proof that the suite can fail: each check runs once more against a server behind a
 * tampering proxy (tamper/proxy.ts) that breaks the contract in one way, and must report it.
 * The self-test passes only when every (tamper, check) pair failed for the planted reason.
 */
import type { CheckResult, Context } from '../lib/check.ts';
import { concurrently } from '../lib/concurrently.ts';
import { Coverage } from '../lib/coverage.ts';
import { startMockServers, startServer, type ServerHandle } from '../lib/stack.ts';
import { arazzoCheck } from '../arazzo/run.ts';
import { dreddCheck } from '../dredd/run.ts';
import { fuzzCheck } from '../fuzz/run.ts';
import { prismProxyCheck } from '../prism/run.ts';
import { startTamperProxy, type Tamper } from './proxy.ts';

type Runner = (ctx: Context, server: ServerHandle, name: string) => Promise<CheckResult>;

const RUNNERS: Record<string, Runner> = {
  'dredd-real': (ctx, s, name) => dreddCheck(name, ctx, { kind: 'real', backupOrigin: s.origin, toolsOrigin: s.origin, allowedRoot: s.allowedRoot, source: s.source, bigSource: s.bigSource }),
  'prism-proxy': (ctx, s, name) => prismProxyCheck(ctx, s, name, { limits: false, faults: false }),
  arazzo: (ctx, s, name) => arazzoCheck(ctx, s, name),
  fuzz: (ctx, s, name) => fuzzCheck(ctx, s, name, { runs: 6, seed: 1, skipAfterFlows: true }),
};

/** Which checks each tamper must trip, and what their report must mention. */
const PLAN: Array<{ tamper: Tamper; checks: string[]; evidence: RegExp }> = [
  { tamper: 'meta-type', checks: ['dredd-real', 'prism-proxy', 'arazzo', 'fuzz'], evidence: /request_id/ },
  { tamper: 'status-code', checks: ['dredd-real', 'prism-proxy', 'arazzo', 'fuzz'], evidence: /\b200\b/ },
  // respect checks status, media type and body schema, not headers: not in this row.
  { tamper: 'drop-header', checks: ['dredd-real', 'prism-proxy', 'fuzz'], evidence: /x-request-id/i },
];

export async function selfTestCheck(base: Context): Promise<CheckResult> {
  const ctx: Context = { ...base, coverage: new Coverage() };
  const failures: string[] = [];
  const lines: string[] = [];
  const pairs = PLAN.flatMap(({ tamper, checks, evidence }) => checks.map((check) => ({ tamper, check, evidence })));
  // Two pairs at a time: each runs its own server and check, and mostly waits on them.
  await concurrently(
    pairs.map(({ tamper, check, evidence }) => async () => {
      const server = await startServer(`self-test-${tamper}-${check}`, { BACKUP_BOOTSTRAP_PLAN: 'free_trial', TRUST_PROXY: 'loopback' });
      const proxy = await startTamperProxy(server.origin, tamper);
      try {
        const result = await RUNNERS[check]!(ctx, { ...server, origin: proxy.origin, backupBase: `${proxy.origin}/api/v1` }, `tampered-${tamper}-${check}`).catch(
          (err: Error): CheckResult => ({ name: check, ok: false, summary: 'crashed', failures: [`crashed: ${err.message}`] }),
        );
        const text = result.failures.join('\n');
        if (result.ok) failures.push(`${check} passed although every answer had "${tamper}" applied (${proxy.altered()} altered)`);
        else if (!evidence.test(text)) failures.push(`${check} failed under "${tamper}" but not for it: ${result.failures[0]?.slice(0, 300)}`);
        else lines.push(`${tamper} → ${check} failed (${result.failures.length} findings)`);
      } finally {
        await proxy.stop();
        await server.stop();
      }
    }),
    2,
  );
  // Dredd against the mock, with the mock's answers tampered.
  const mock = await startMockServers();
  const backupProxy = await startTamperProxy(mock.backupOrigin, 'meta-type');
  const toolsProxy = await startTamperProxy(mock.toolsOrigin, 'meta-type');
  try {
    const result = await dreddCheck('tampered-dredd-mock', ctx, { kind: 'mock', backupOrigin: backupProxy.origin, toolsOrigin: toolsProxy.origin });
    if (result.ok) failures.push('dredd-mock passed although every answer had "meta-type" applied');
    else lines.push(`meta-type → dredd-mock failed (${result.failures.length} findings)`);
  } finally {
    await backupProxy.stop();
    await toolsProxy.stop();
    await mock.stop();
  }
  return {
    name: 'self-test',
    ok: failures.length === 0,
    summary: `${pairs.length + 1} (tamper, check) pairs, ${pairs.length + 1 - failures.length} reported the planted violation`,
    failures,
    notes: lines,
  };
}

/**
 * Prism as a validating proxy in front of the real server (`prism proxy <doc> <upstream>`, one per
 * document) while the integration flows run through it.
 *
 * Prism reports what it finds in the `sl-violations` response header (a JSON list of
 * {location, severity, code, message}; location starts with "request" or "response"). With
 * `--errors` it would replace an answer by a 500 problem+json, but only for response violations
 * of severity Error: an undocumented non-2xx status is only a Warning there. So the proxy runs
 * without --errors and this check fails on every response violation of any severity, taken from
 * the header. Request violations are expected (the flows send invalid requests on purpose) and
 * ignored. Every answer is also validated against the document by ajv as a second opinion.
 */
import { join } from 'node:path';
import type { CheckResult, Context } from '../lib/check.ts';
import { freePort, start, waitForHttp, type Proc } from '../lib/proc.ts';
import { Session, type Exchange } from '../lib/session.ts';
import { ROOT, WORK, type ServerHandle } from '../lib/stack.ts';
import { destinationUnavailableFlows, storeUnavailableFlows } from './faults.ts';
import { backupFlows, lifecycleFlows, limitFlows, toolsFlows } from './flows.ts';

interface Violation {
  location?: string[];
  severity?: string;
  code?: string | number;
  message?: string;
}

export function responseViolations(header: string | undefined): string[] {
  if (!header) return [];
  if (header.startsWith('Too many violations!')) return [header.slice(0, 300)];
  let list: Violation[];
  try {
    list = JSON.parse(header) as Violation[];
  } catch {
    return [`unreadable sl-violations header: ${header.slice(0, 200)}`];
  }
  return list
    .filter((v) => v.location?.[0] === 'response')
    .map((v) => `${v.severity ?? '?'} at ${(v.location ?? []).join('.')}: ${v.message ?? ''}`);
}

async function startProxy(name: string, doc: string, upstream: string, caFile?: string): Promise<{ proc: Proc; origin: string }> {
  const port = await freePort();
  // Through this Node (24), whatever `node` is first on PATH.
  const proc = start(process.execPath, [join(ROOT, 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js'), 'proxy', doc, upstream, '-p', String(port), '-h', '127.0.0.1'], {
    cwd: ROOT,
    logFile: join(WORK, `${name}.log`),
    ...(caFile ? { env: { NODE_EXTRA_CA_CERTS: caFile } } : {}),
  });
  const origin = `http://127.0.0.1:${port}`;
  await waitForHttp(`${origin}/__prism_ready`, 30_000, proc);
  return { proc, origin };
}

/**
 * Runs the flows through Prism proxies in front of `server` and collects every response
 * violation. The server must trust the loopback proxy (TRUST_PROXY=loopback) and run the
 * free_trial plan for the account 429s.
 */
export async function prismProxyCheck(ctx: Context, server: ServerHandle, name = 'prism-proxy', options: { limits?: boolean; faults?: boolean } = {}): Promise<CheckResult> {
  const backupApi = ctx.apis.find((a) => a.api === 'backup');
  const toolsApi = ctx.apis.find((a) => a.api === 'tools');
  if (!backupApi || !toolsApi) throw new Error('both documents are needed');
  const backupProxy = await startProxy(`${name}-backup`, backupApi.file, server.origin + backupApi.basePath, server.caFile);
  const toolsProxy = await startProxy(`${name}-tools`, toolsApi.file, server.origin + toolsApi.basePath, server.caFile);
  const failures: string[] = [];
  let violations = 0;
  const observe = (x: Exchange): void => {
    const where = `${x.method} ${x.path} → ${x.res.status}`;
    for (const v of responseViolations(x.res.headers['sl-violations'])) {
      violations++;
      failures.push(`${where}: Prism: ${v}`);
    }
    if (!x.op) {
      failures.push(`${where}: no documented operation matches`);
      return;
    }
    const verdict = ctx.validator.check(x.op, x.res.status, x.res.headers, x.res.json, x.res.text);
    for (const p of verdict.problems) failures.push(`${where}: ajv: ${p}`);
    if (verdict.ok && verdict.key && x.expected.includes(x.res.status) && !x.res.headers['sl-violations']?.includes('"response"')) {
      ctx.coverage.add(name, x.op.operationId, verdict.key);
    }
  };
  const session = new Session(ctx.apis, { backup: backupProxy.origin, tools: toolsProxy.origin }, observe);
  // The lifecycle runs in an account of its own: the main one keeps its plan's budget for the 429s.
  const lifecycle = new Session(ctx.apis, { backup: backupProxy.origin, tools: toolsProxy.origin }, observe);
  try {
    const env = { allowedRoot: server.allowedRoot, source: server.source, bigSource: server.bigSource, siteOrigin: ctx.siteOrigin };
    const { backupId } = await backupFlows(session, env);
    await toolsFlows(session, env);
    const key = server.newKey('business');
    await lifecycle.login(key.apiKey, key.secret);
    const kept = await lifecycleFlows(lifecycle, env);
    if (options.faults !== false) await destinationUnavailableFlows(lifecycle, join(server.dataDir, 'repositories', key.accountId, 'cloud'), kept.backupId);
    if (options.faults !== false) await storeUnavailableFlows(session, server.dataDir, server.source, server.allowedRoot, backupId);
    if (options.limits !== false) await limitFlows(session, env);
  } catch (err) {
    failures.push(`flow aborted: ${(err as Error).message}`);
  } finally {
    await backupProxy.proc.stop();
    await toolsProxy.proc.stop();
  }
  failures.push(...session.failures, ...lifecycle.failures);
  return {
    name,
    ok: failures.length === 0,
    summary: `${session.exchanges.length + lifecycle.exchanges.length} requests through Prism, ${violations} response violations, ${session.failures.length + lifecycle.failures.length} unexpected statuses`,
    failures,
  };
}

/**
 * The contract over HTTPS: one real server serving TLS itself (a test CA made with openssl),
 * trusting the loopback proxy, counting its limits in a throwaway Redis. Against it run Dredd,
 * the Prism-proxy flows (without the limit and database-fault flows the plain run covers) and a
 * shorter fuzz; then the transport rules every operation must follow:
 *
 * - every answer over TLS carries Strict-Transport-Security;
 * - `X-Forwarded-Proto: http` from the trusted proxy is refused 403 HTTPS_REQUIRED, as documented;
 * - with Redis down, every limited operation answers its documented 503 with Retry-After, and
 *   serves again once Redis is back, without a restart.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createCa, issueCertificate } from '../../scripts/dev-cert/pki.ts';
import { startRedis } from '../../server/testing/services/redis.ts';
import type { CheckResult, Context } from '../lib/check.ts';
import { send, trustCa, type RawResponse } from '../lib/http.ts';
import { Session } from '../lib/session.ts';
import type { Operation } from '../lib/spec.ts';
import { CREDENTIALS, startServer, WORK, type ServerHandle } from '../lib/stack.ts';
import { dreddCheck } from '../dredd/run.ts';
import { fuzzCheck } from '../fuzz/run.ts';
import { sampleRequests, type FuzzEnv, type FuzzRequest } from '../fuzz/requests.ts';
import { prismProxyCheck } from '../prism/run.ts';

const NAME = 'https';
const HSTS = 'max-age=63072000';

/** One plain, valid-looking request per operation (the fuzzer's first generated one). */
function requestsPerOperation(ctx: Context, env: FuzzEnv): Array<{ op: Operation; req: FuzzRequest }> {
  return ctx.apis.flatMap((api) => api.operations.map((op) => ({ op, req: sampleRequests(api, op, env, 1, 1)[0]! })));
}

export async function httpsCheck(ctx: Context): Promise<CheckResult> {
  const pki = join(WORK, 'https-pki');
  const ca = createCa(pki, { commonName: 'Contract tests CA' });
  const leaf = issueCertificate({ ca, dir: pki, name: 'server', altNames: ['IP:127.0.0.1', 'DNS:localhost'] });
  trustCa(readFileSync(ca.cert, 'utf8'));
  const redis = await startRedis();
  let server: ServerHandle | undefined;
  const failures: string[] = [];
  const summaries: string[] = [];
  try {
    server = await startServer(NAME, { TLS_CERT_FILE: leaf.cert, TLS_KEY_FILE: leaf.key, TRUST_PROXY: 'loopback', REDIS_URL: redis.url }, ca.cert);
    const s = server;
    // The plain run covers the limit and database-fault flows and the fuzzer's after-flows.
    const checks: Array<() => Promise<CheckResult>> = [
      () => dreddCheck(`${NAME}-dredd`, ctx, { kind: 'real', backupOrigin: s.origin, toolsOrigin: s.origin, allowedRoot: s.allowedRoot, source: s.source, bigSource: s.bigSource, caFile: ca.cert }),
      () => prismProxyCheck(ctx, s, `${NAME}-prism`, { limits: false, faults: false }),
      () => fuzzCheck(ctx, s, `${NAME}-fuzz`, { runs: Number(process.env.CONTRACT_HTTPS_FUZZ_RUNS ?? 24), skipAfterFlows: true }),
    ];
    // Logged in first: the checks' unauthenticated requests spend the address's budget of failed
    // authentications (30 an hour), which would refuse a login after them.
    const setup = new Session(ctx.apis, { backup: s.backupBase, tools: s.origin });
    await setup.login(CREDENTIALS.apiKey, CREDENTIALS.secret);
    for (const check of checks) {
      const started = Date.now();
      const r = await check();
      summaries.push(`${r.name} (${((Date.now() - started) / 1000).toFixed(1)} s): ${r.summary}`);
      failures.push(...r.failures.map((f) => `${r.name}: ${f}`));
    }

    const env: FuzzEnv = { token: setup.token ?? '', source: s.source, allowedRoot: s.allowedRoot, backupIds: [], restoreIds: [], sitePort: Number(new URL(ctx.siteOrigin).port) };
    const probes = requestsPerOperation(ctx, env);
    const validate = (op: Operation, res: RawResponse, want: number, what: string) => {
      const where = `${op.operationId} ${what}`;
      if (res.status !== want) return failures.push(`${where}: expected ${want}, got ${res.status} ${res.text.slice(0, 200)}`);
      const verdict = ctx.validator.check(op, res.status, res.headers, res.json, res.text);
      if (!verdict.ok) return failures.push(`${where}: ${verdict.problems.join('; ')}`);
      if (verdict.key) ctx.coverage.add(NAME, op.operationId, verdict.key);
      return undefined;
    };
    const call = (req: FuzzRequest, headers: Record<string, string> = {}) =>
      send({ method: req.method, url: s.origin + req.path, headers: { ...req.headers, ...headers }, body: req.body });

    for (const { op, req } of probes) {
      const res = await call(req);
      if (res.headers['strict-transport-security'] !== HSTS) failures.push(`${op.operationId} over TLS (${res.status}): Strict-Transport-Security is ${res.headers['strict-transport-security'] ?? 'missing'}`);
      const plain = await call(req, { 'X-Forwarded-Proto': 'http' });
      // The health probes answer plain HTTP as well (x-https-exempt), as over TLS.
      if (op.op['x-https-exempt']) {
        validate(op, plain, res.status, 'behind a proxy reporting http (exempt)');
        continue;
      }
      validate(op, plain, 403, 'behind a proxy reporting http');
      if ((plain.json as { error?: { code?: string } } | undefined)?.error?.code !== 'HTTPS_REQUIRED') failures.push(`${op.operationId}: 403 without HTTPS_REQUIRED: ${plain.text.slice(0, 200)}`);
    }

    await redis.stop();
    try {
      for (const { op, req } of probes) {
        if (!op.op['x-rate-limit'] && op.operationId !== 'getReadiness') continue; // not limited; readiness checks Redis
        const res = await call(req);
        validate(op, res, 503, 'with Redis down');
        if (!(Number(res.headers['retry-after']) > 0)) failures.push(`${op.operationId} with Redis down: no Retry-After`);
      }
    } finally {
      await redis.start();
    }
    const ipInfo = probes.find((p) => p.op.operationId === 'getIpInfo')!;
    let back = 0;
    for (let i = 0; i < 50 && back !== 200; i++) {
      back = (await call(ipInfo.req)).status;
      if (back !== 200) await sleep(100);
    }
    if (back !== 200) failures.push(`after Redis came back, getIpInfo still answers ${back}`);
    summaries.push(`${probes.length} operations: HSTS over TLS, 403 HTTPS_REQUIRED via a proxy reporting http, 503 while Redis was down, served again once it was back`);
  } catch (err) {
    failures.push(`aborted: ${(err as Error).stack ?? String(err)}`);
  } finally {
    await server?.stop();
    await redis.cleanup();
  }
  if (failures.length && server) failures.push(`server log: ${server.logFile}`);
  return { name: NAME, ok: failures.length === 0, summary: summaries.join('; '), failures };
}

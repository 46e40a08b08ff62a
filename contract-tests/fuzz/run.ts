/**
 * Schema-driven fuzzing against a real server: for every operation a bounded number of
 * generated and mutated requests (fuzz/requests.ts). Asserts: never a 5xx; every 4xx is the
 * error envelope with a catalogue code whose status is the catalogue's; every answer to a
 * documented status validates against the document (2xx bodies included); and afterwards the
 * normal flows still work (nothing the server accepted broke it).
 *
 * CONTRACT_FUZZ_RUNS (default 100) requests per operation. The seed is fixed by default so CI
 * runs are reproducible; CONTRACT_FUZZ_SEED=<n> replays a run, CONTRACT_FUZZ_SEED=random explores.
 */
import type { CheckResult, Context } from '../lib/check.ts';
import { send } from '../lib/http.ts';
import { Session, type Exchange } from '../lib/session.ts';
import { CREDENTIALS, type ServerHandle } from '../lib/stack.ts';
import { backupFlows, toolsFlows } from '../prism/flows.ts';
import { matchOperation, type ApiDoc, type Json } from '../lib/spec.ts';
import { sampleRequests, type FuzzEnv, type FuzzRequest } from './requests.ts';

/** The catalogue: each error code and the one status it comes with (the document's x-error-catalogue). */
function catalogue(apis: ApiDoc[]): Map<string, number> {
  const map = new Map<string, number>();
  for (const api of apis) {
    const entries: Record<string, { status?: number }> = api.doc.components?.schemas?.['ErrorCode']?.['x-error-catalogue'] ?? {};
    for (const [code, entry] of Object.entries(entries)) if (entry.status !== undefined) map.set(code, entry.status);
  }
  return map;
}

export interface FuzzOptions {
  runs?: number;
  seed?: number;
  /** Skip the flows after fuzzing (the self-test only needs the response checks). */
  skipAfterFlows?: boolean;
}

export async function fuzzCheck(ctx: Context, server: ServerHandle, name = 'fuzz', options: FuzzOptions = {}): Promise<CheckResult> {
  const runs = options.runs ?? Number(process.env.CONTRACT_FUZZ_RUNS ?? 100);
  const seedEnv = process.env.CONTRACT_FUZZ_SEED;
  const seed = options.seed ?? (seedEnv === 'random' ? Date.now() % 2 ** 31 : Number(seedEnv ?? 20261121));
  const codes = catalogue(ctx.apis);
  const failures = new Map<string, string>();
  const fail = (key: string, detail: string) => {
    if (!failures.has(key)) failures.set(key, detail);
  };

  // Fixtures: a token, completed backups and a restore to point ids at.
  const setup = new Session(ctx.apis, { backup: server.origin + '/api/v1', tools: server.origin });
  await setup.login(CREDENTIALS.apiKey, CREDENTIALS.secret);
  const backupIds: string[] = [];
  for (const source of [server.source, `${server.source}/docs`]) {
    const res = await setup.call('backup', 'POST', '/backup', { body: { source }, expect: 202 });
    const id = String(Session.data(res)?.['id']);
    await setup.waitJob('backup', id);
    backupIds.push(id);
  }
  const restore = await setup.call('backup', 'POST', '/restore', { body: { backup_id: backupIds[0], target_path: `${server.allowedRoot}/fuzz-fixture` }, expect: 202 });
  const restoreIds = [String(Session.data(restore)?.['id'])];
  if (setup.failures.length) return { name, ok: false, summary: 'fixture setup failed', failures: setup.failures };
  const env: FuzzEnv = { token: setup.token ?? '', source: server.source, allowedRoot: server.allowedRoot, backupIds, restoreIds, sitePort: Number(new URL(ctx.siteOrigin).port) };

  let sent = 0;
  const statuses = new Map<number, number>();
  for (const api of ctx.apis) {
    for (const op of api.operations) {
      let requests: FuzzRequest[];
      try {
        requests = sampleRequests(api, op, env, runs, seed);
      } catch (err) {
        fail(`${op.operationId} generator`, `cannot build requests: ${(err as Error).message}`);
        continue;
      }
      for (const req of requests) {
        const where = `${op.operationId} [${req.kind}] ${req.method} ${req.path.slice(0, 120)}`;
        let res;
        try {
          res = await send({ method: req.method, url: server.origin + req.path, headers: req.headers, body: req.body, timeoutMs: 35_000 });
        } catch (err) {
          fail(`${op.operationId} ${req.kind} transport`, `${where}: no answer (${(err as Error).message})`);
          continue;
        }
        sent++;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const sample = `${where} body=${String(req.body ?? '').slice(0, 160)} headers=${JSON.stringify(req.headers).slice(0, 200)} → ${res.status} ${res.text.slice(0, 200)}`;
        if (res.status >= 500) {
          fail(`${op.operationId} ${req.kind} ${res.status}`, `5xx: ${sample}`);
          continue;
        }
        if (res.status >= 400) {
          const body = res.json as { success?: unknown; error?: { code?: unknown } } | undefined;
          const code = typeof body?.error?.code === 'string' ? body.error.code : undefined;
          if (body?.success !== false || !code) fail(`${op.operationId} ${res.status} envelope`, `4xx without the error envelope: ${sample}`);
          else if (!codes.has(code)) fail(`${op.operationId} code ${code}`, `code not in the catalogue: ${sample}`);
          else if (codes.get(code) !== res.status) fail(`${op.operationId} code ${code} ${res.status}`, `${code} is ${codes.get(code)} in the catalogue, answered ${res.status}: ${sample}`);
        }
        const code = (res.json as { error?: { code?: unknown } } | undefined)?.error?.code;
        if (req.expectCode && code !== req.expectCode) fail(`${op.operationId} ${req.kind} expects ${req.expectCode}`, `expected ${req.expectCode}, got ${res.status} ${String(code)}: ${sample}`);
        const matched = matchOperation([api], req.method, req.path) ?? op;
        const verdict = ctx.validator.check(matched, res.status, res.headers, res.json, res.text);
        if (!verdict.ok) {
          fail(`${matched.operationId} ${res.status} ${verdict.problems[0]?.replace(/\d+/g, 'N')}`, `${verdict.problems.join('; ')}: ${sample}`);
        } else if (verdict.key) {
          ctx.coverage.add(name, matched.operationId, verdict.key);
        }
      }
    }
  }

  // Nothing the fuzzer sent may have broken the server: the normal flows must still pass.
  let afterNote = '';
  if (!options.skipAfterFlows) {
    const observe = (x: Exchange) => {
      if (x.res.status >= 500) fail(`after ${x.method} ${x.path}`, `5xx after fuzzing: ${x.res.status} ${x.res.text.slice(0, 200)}`);
      const verdict = x.op ? ctx.validator.check(x.op, x.res.status, x.res.headers, x.res.json, x.res.text) : undefined;
      if (verdict && !verdict.ok) fail(`after ${x.method} ${x.path} schema`, `after fuzzing, ${x.method} ${x.path} → ${x.res.status}: ${verdict.problems.join('; ')}`);
    };
    const after = new Session(ctx.apis, { backup: server.origin + '/api/v1', tools: server.origin }, observe);
    // A client address the fuzzer never used: its failed attempts count against its own addresses.
    after.defaultHeaders = { 'X-Forwarded-For': '192.0.2.77' };
    const flowEnv = { allowedRoot: server.allowedRoot, source: server.source, bigSource: server.bigSource, siteOrigin: ctx.siteOrigin };
    try {
      await backupFlows(after, flowEnv);
      await toolsFlows(after, flowEnv);
      // Everything the fuzzer got accepted must still list and read back within the schema.
      let cursor: unknown = undefined;
      for (let page = 0; page < 50; page++) {
        const res = await after.call('backup', 'GET', `/backup?limit=100${typeof cursor === 'string' ? `&cursor=${cursor}` : ''}`, { expect: 200 });
        const data = Session.data(res);
        for (const item of (data?.['items'] as Array<{ id?: string; status?: string }> | undefined) ?? []) {
          if (item.status === 'completed' && item.id) await after.call('backup', 'GET', `/files?backup_id=${item.id}&limit=1000`, { expect: 200 });
        }
        cursor = data?.['next_cursor'];
        if (typeof cursor !== 'string') break;
      }
    } catch (err) {
      fail('after-flows', `normal flow aborted after fuzzing: ${(err as Error).message}`);
    }
    for (const f of after.failures) fail(`after ${f.slice(0, 60)}`, `after fuzzing: ${f}`);
    const status = await send({ method: 'GET', url: `${server.origin}/api/v1/status` });
    const state = (status.json as { data?: { status?: string } } | undefined)?.data?.status;
    if (status.status !== 200 || state !== 'ok') fail('after-status', `GET /status after fuzzing: ${status.status} ${status.text.slice(0, 200)}`);
    afterNote = `, then ${after.exchanges.length} flow requests`;
  }

  const histogram = [...statuses].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ');
  return {
    name,
    ok: failures.size === 0,
    summary: `seed ${seed}, ${sent} requests (${histogram})${afterNote}, ${failures.size} distinct problems`,
    failures: [...failures.values()],
  };
}

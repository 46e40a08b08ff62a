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
import { probe } from '../lib/probe.ts';
import { Session, type Exchange } from '../lib/session.ts';
import { CREDENTIALS, type ServerHandle } from '../lib/stack.ts';
import { backupFlows, toolsFlows } from '../prism/flows.ts';
import { sampleRequests, type FuzzEnv } from './requests.ts';

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
    const id = Session.data(res)?.['id'];
    if (typeof id !== 'string') return { name, ok: false, summary: 'fixture setup failed', failures: setup.failures };
    await setup.waitJob('backup', id);
    backupIds.push(id);
  }
  const restore = await setup.call('backup', 'POST', '/restore', { body: { backup_id: backupIds[0], target_path: `${server.allowedRoot}/fuzz-fixture` }, expect: 202 });
  const restoreIds = [String(Session.data(restore)?.['id'])];
  if (setup.failures.length) return { name, ok: false, summary: 'fixture setup failed', failures: setup.failures };
  const env: FuzzEnv = {
    token: setup.token ?? '',
    source: server.source,
    allowedRoot: server.allowedRoot,
    backupIds,
    restoreIds,
    sitePort: Number(new URL(ctx.siteOrigin).port),
    credentials: CREDENTIALS,
  };

  let sent = 0;
  const statuses = new Map<number, number>();
  for (const api of ctx.apis) {
    const work = [];
    for (const op of api.operations) {
      try {
        work.push({ op, requests: sampleRequests(api, op, env, runs, seed) });
      } catch (err) {
        fail(`${op.operationId} generator`, `cannot build requests: ${(err as Error).message}`);
      }
    }
    const probed = await probe({ apis: ctx.apis, validator: ctx.validator, coverage: ctx.coverage, name }, api, server.origin + api.basePath, work);
    sent += probed.sent;
    for (const [status, n] of probed.statuses) statuses.set(status, (statuses.get(status) ?? 0) + n);
    for (const [key, detail] of probed.failures) fail(key, detail);
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

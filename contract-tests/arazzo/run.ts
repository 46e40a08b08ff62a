/**
 * Runs the Arazzo workflows (contract-tests/arazzo/*.arazzo.yaml) with `redocly respect`
 * against a real server: respect checks each step's success criteria and, from the OpenAPI
 * document, that the status code is documented, the content type matches and the body fits the
 * schema. The JSON log gives the coverage.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CheckResult, Context } from '../lib/check.ts';
import { run } from '../lib/proc.ts';
import { matchOperation, responseKey } from '../lib/spec.ts';
import { CREDENTIALS, ROOT, WORK, type ServerHandle } from '../lib/stack.ts';

interface RespectCheck {
  name: string;
  passed: boolean;
  message?: string;
}
interface RespectStep {
  stepId: string;
  workflowId: string;
  request?: { method: string; url: string };
  response?: { statusCode: number };
  checks?: RespectCheck[];
}
interface RespectLog {
  files: Record<string, { executedWorkflows: Array<{ workflowId: string; status: string; executedSteps: RespectStep[] }> }>;
}

/** Checks that come from the OpenAPI document rather than from the workflow's own criteria. */
const CONTRACT_CHECKS = new Set(['status code check', 'content-type check', 'schema check']);

export async function arazzoCheck(ctx: Context, server: ServerHandle, name = 'arazzo'): Promise<CheckResult> {
  const dir = join(ROOT, 'contract-tests', 'arazzo');
  const files = readdirSync(dir).filter((f) => f.endsWith('.arazzo.yaml'));
  const failures: string[] = [];
  let steps = 0;
  let workflows = 0;
  for (const file of files) {
    const jsonLog = join(WORK, `${name}-${file}.json`);
    const input = {
      api_key: CREDENTIALS.apiKey,
      secret: CREDENTIALS.secret,
      source: server.source,
      target_path: join(server.allowedRoot, `arazzo-restore-${Date.now()}`),
      allowed_root: server.allowedRoot,
      site_url: ctx.siteOrigin,
      email: `arazzo-${Date.now()}@example.com`,
    };
    const servers = ctx.apis.map((a) => `${a.api}=${server.origin}${a.basePath}`).join(',');
    const { code, timedOut } = await run(
      process.execPath,
      [join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js'), 'respect', join(dir, file), '--server', servers, '--input', JSON.stringify(input), '--json-output', jsonLog, '--max-fetch-timeout', '30000', '--execution-timeout', '120000'],
      { cwd: ROOT, logFile: join(WORK, `${name}-${file}.log`), timeoutMs: 150_000, env: { REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
    );
    if (timedOut) failures.push(`${file}: respect timed out`);
    else if (code !== 0) failures.push(`${file}: respect exited ${code} (log ${join(WORK, `${name}-${file}.log`)})`);
    if (!existsSync(jsonLog)) {
      failures.push(`${file}: no JSON log`);
      continue;
    }
    const log = JSON.parse(readFileSync(jsonLog, 'utf8')) as RespectLog;
    for (const result of Object.values(log.files)) {
      for (const wf of result.executedWorkflows) {
        workflows++;
        if (wf.status !== 'success') failures.push(`${file} ${wf.workflowId}: ${wf.status}`);
        const finalAttempt = new Map<string, RespectStep>();
        for (const step of wf.executedSteps) {
          steps++;
          finalAttempt.set(step.stepId, step);
          const contract = (step.checks ?? []).filter((c) => CONTRACT_CHECKS.has(c.name));
          for (const c of contract.filter((c) => !c.passed)) {
            failures.push(`${wf.workflowId}/${step.stepId} → ${step.response?.statusCode ?? 'no answer'}: ${c.name}: ${(c.message ?? '').replace(/\s+/g, ' ').slice(0, 300)}`);
          }
          if (!step.request || !step.response || contract.some((c) => !c.passed)) continue;
          const url = new URL(step.request.url);
          const op = matchOperation(ctx.apis, step.request.method, url.pathname);
          const key = op ? responseKey(op, step.response.statusCode) : undefined;
          if (op && key) ctx.coverage.add(name, op.operationId, key);
        }
        // A retried step only counts as failed when its last attempt failed.
        for (const step of finalAttempt.values()) {
          for (const c of (step.checks ?? []).filter((c) => !c.passed && !CONTRACT_CHECKS.has(c.name))) {
            failures.push(`${wf.workflowId}/${step.stepId} → ${step.response?.statusCode ?? 'no answer'}: ${c.name}: ${(c.message ?? '').replace(/\s+/g, ' ').slice(0, 300)}`);
          }
        }
      }
    }
  }
  return {
    name,
    ok: failures.length === 0,
    summary: `${files.length} Arazzo files, ${workflows} workflows, ${steps} step runs`,
    failures,
  };
}

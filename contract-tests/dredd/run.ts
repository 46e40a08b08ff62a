/**
 * Runs Dredd over the generated OpenAPI 3.0 copies (Dredd does not read 3.1) with hooks.cjs,
 * once per document, and turns the per-transaction lines the hooks write into a check result
 * and coverage.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CheckResult, Context } from '../lib/check.ts';
import { run } from '../lib/proc.ts';
import { matchOperation, responseKey } from '../lib/spec.ts';
import { CREDENTIALS, ROOT, WORK } from '../lib/stack.ts';

export interface DreddTarget {
  /** "real" or "mock": selects the hook behaviour. */
  kind: 'real' | 'mock';
  /** Origin serving each API (the mock serves them on two ports). */
  backupOrigin: string;
  toolsOrigin: string;
  allowedRoot?: string;
  source?: string;
  bigSource?: string;
  /** CA for an https:// origin (given to Dredd and its hooks as NODE_EXTRA_CA_CERTS). */
  caFile?: string;
}

interface Line {
  name: string;
  method: string;
  path: string;
  expected: number;
  actual?: number;
  skipped: boolean;
  skipReason?: string;
  result?: string;
  errors?: string;
}

export async function dreddCheck(name: string, ctx: Context, target: DreddTarget): Promise<CheckResult> {
  const results = join(WORK, `${name}.jsonl`);
  writeFileSync(results, '');
  const failures: string[] = [];
  const notes: string[] = [];
  for (const api of ctx.apis) {
    const origin = api.api === 'backup' ? target.backupOrigin : target.toolsOrigin;
    const endpoint = origin + api.basePath;
    const { code, timedOut } = await run(
      process.execPath,
      [
        join(ROOT, 'node_modules', 'dredd', 'bin', 'dredd'),
        api.file30,
        endpoint,
        `--hookfiles=${join(ROOT, 'contract-tests', 'dredd', 'hooks.cjs')}`,
        '--language=nodejs',
        '--color=false',
        '--loglevel=warning',
      ],
      {
        cwd: ROOT,
        logFile: join(WORK, `${name}-${api.api}.log`),
        timeoutMs: 180_000,
        env: {
          CONTRACT_TARGET: target.kind,
          CONTRACT_BACKUP_BASE: target.backupOrigin + '/api/v1',
          CONTRACT_RESULTS: results,
          CONTRACT_DOC: api.file,
          CONTRACT_API_KEY: CREDENTIALS.apiKey,
          CONTRACT_SECRET: CREDENTIALS.secret,
          CONTRACT_ALLOWED_ROOT: target.allowedRoot ?? '',
          CONTRACT_SOURCE: target.source ?? '',
          CONTRACT_BIG_SOURCE: target.bigSource ?? '',
          CONTRACT_SITE: ctx.siteOrigin,
          NODE_NO_WARNINGS: '1',
          ...(target.caFile ? { NODE_EXTRA_CA_CERTS: target.caFile } : {}),
        },
      },
    );
    if (timedOut) failures.push(`dredd on ${api.api} timed out (log ${join(WORK, `${name}-${api.api}.log`)})`);
    else if (code !== 0) failures.push(`dredd on ${api.api} exited ${code} (log ${join(WORK, `${name}-${api.api}.log`)})`);
  }
  const lines: Line[] = existsSync(results)
    ? readFileSync(results, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Line)
    : [];
  let passed = 0;
  let skipped = 0;
  for (const line of lines) {
    const api = ctx.apis.find((a) => a.operations.some((o) => o.path === line.path && o.method === line.method.toUpperCase()));
    const op = api ? matchOperation([api], line.method, api.basePath + line.path) : undefined;
    if (line.skipped) {
      skipped++;
      notes.push(`skipped ${line.name}: ${line.skipReason ?? 'skipped'}`);
      continue;
    }
    if (line.result === 'pass') {
      passed++;
      if (op) {
        const key = responseKey(op, line.expected);
        if (key) ctx.coverage.add(name, op.operationId, key);
      }
    } else {
      failures.push(`${line.name}: expected ${line.expected}, got ${line.actual ?? 'no answer'} ${line.errors ?? ''}`.trim());
    }
  }
  if (lines.length === 0) failures.push('no transaction ran');
  return {
    name,
    ok: failures.length === 0,
    summary: `${lines.length} transactions: ${passed} passed, ${lines.length - passed - skipped} failed, ${skipped} skipped`,
    failures,
    notes,
  };
}

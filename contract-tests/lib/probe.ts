/**
 * Sends requests to a target and judges every answer against the document: never a 5xx; a
 * status the operation documents, whose body, media type and headers validate; and, where the
 * document carries the error catalogue (x-error-catalogue), every 4xx in the error envelope with
 * a catalogue code of that status. Shared by the fuzz check and the contract-check command.
 */
import type { FuzzRequest } from '../fuzz/requests.ts';
import type { Coverage } from './coverage.ts';
import { send } from './http.ts';
import { matchOperation, type ApiDoc, type Operation, type ResponseValidator } from './spec.ts';

/** Each error code and the one status it comes with, when the document has the catalogue. */
export function catalogue(apis: ApiDoc[]): Map<string, number> | undefined {
  let found = false;
  const map = new Map<string, number>();
  for (const api of apis) {
    const entries: Record<string, { status?: number }> | undefined = api.doc.components?.schemas?.['ErrorCode']?.['x-error-catalogue'];
    if (!entries) continue;
    found = true;
    for (const [code, entry] of Object.entries(entries)) if (entry.status !== undefined) map.set(code, entry.status);
  }
  return found ? map : undefined;
}

export interface Probed {
  sent: number;
  statuses: Map<number, number>;
  /** One line per distinct problem, by a key that groups repeats. */
  failures: Map<string, string>;
  /** Requests sent and problems found, per operationId. */
  operations: Map<string, { sent: number; problems: string[] }>;
}

export interface ProbeOptions {
  apis: ApiDoc[];
  validator: ResponseValidator;
  coverage?: Coverage;
  /** Name the coverage is recorded under. */
  name: string;
}

/** Sends each operation's requests to `base` (the URL the document's base path stands for) and judges the answers. */
export async function probe(options: ProbeOptions, api: ApiDoc, base: string, work: { op: Operation; requests: FuzzRequest[] }[]): Promise<Probed> {
  const codes = catalogue(options.apis);
  const result: Probed = { sent: 0, statuses: new Map(), failures: new Map(), operations: new Map() };
  for (const { op, requests } of work) {
    const tally = { sent: 0, problems: [] as string[] };
    result.operations.set(op.operationId, tally);
    const fail = (key: string, detail: string): void => {
      if (!result.failures.has(key)) result.failures.set(key, detail);
      if (tally.problems.length < 20 && !tally.problems.includes(detail)) tally.problems.push(detail);
    };
    for (const req of requests) {
      const where = `${op.operationId} [${req.kind}] ${req.method} ${req.path.slice(0, 120)}`;
      let res;
      try {
        res = await send({ method: req.method, url: base + req.path.slice(api.basePath.length), headers: req.headers, body: req.body, timeoutMs: 35_000 });
      } catch (err) {
        fail(`${op.operationId} ${req.kind} transport`, `${where}: no answer (${(err as Error).message})`);
        continue;
      }
      result.sent++;
      tally.sent++;
      result.statuses.set(res.status, (result.statuses.get(res.status) ?? 0) + 1);
      const sample = `${where} body=${String(req.body ?? '').slice(0, 160)} headers=${JSON.stringify(req.headers).slice(0, 200)} → ${res.status} ${res.text.slice(0, 200)}`;
      if (res.status >= 500) {
        fail(`${op.operationId} ${req.kind} ${res.status}`, `5xx: ${sample}`);
        continue;
      }
      if (res.status >= 400 && codes) {
        const body = res.json as { success?: unknown; error?: { code?: unknown } } | undefined;
        const code = typeof body?.error?.code === 'string' ? body.error.code : undefined;
        if (body?.success !== false || !code) fail(`${op.operationId} ${res.status} envelope`, `4xx without the error envelope: ${sample}`);
        else if (!codes.has(code)) fail(`${op.operationId} code ${code}`, `code not in the catalogue: ${sample}`);
        else if (codes.get(code) !== res.status) fail(`${op.operationId} code ${code} ${res.status}`, `${code} is ${codes.get(code)} in the catalogue, answered ${res.status}: ${sample}`);
      }
      const code = (res.json as { error?: { code?: unknown } } | undefined)?.error?.code;
      if (req.expectCode && code !== req.expectCode) fail(`${op.operationId} ${req.kind} expects ${req.expectCode}`, `expected ${req.expectCode}, got ${res.status} ${String(code)}: ${sample}`);
      const matched = matchOperation([api], req.method, req.path) ?? op;
      const verdict = options.validator.check(matched, res.status, res.headers, res.json, res.text);
      if (!verdict.ok) {
        fail(`${matched.operationId} ${res.status} ${verdict.problems[0]?.replace(/\d+/g, 'N')}`, `${verdict.problems.join('; ')}: ${sample}`);
      } else if (verdict.key) {
        options.coverage?.add(options.name, matched.operationId, verdict.key);
      }
    }
  }
  return result;
}

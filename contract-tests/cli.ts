#!/usr/bin/env node
/**
 * contract-check: the conformance checks of contract-tests/, pointed at any running deployment.
 * For every operation of a bundled OpenAPI document it sends schema-generated requests and
 * mutated ones (wrong types, missing and extra properties, huge strings, bodies that are not
 * JSON, other media types, odd headers, bad path and query values) and judges every answer: no
 * 5xx; a status the operation documents; body, media type and headers valid against it; 4xx in
 * the error envelope with the catalogue's code for that status (when the document has one).
 *
 *   contract-check --spec <file|url> --target <base-url> [--token-cmd <command>] [--junit FILE]
 *                  [--runs 20] [--seed 20261121]
 *
 * --target is the deployment's origin (the document's server path is appended) or a full base
 * URL. --token-cmd is a shell command that prints a bearer token, sent on the operations the
 * document secures. Exit 0 when every answer conforms, 1 when one does not, 2 when the check
 * could not run (bad arguments, unreadable document, unreachable target).
 */
import { execSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { sampleRequests, secured } from './fuzz/requests.ts';
import { junitXml } from './lib/junit.ts';
import { probe } from './lib/probe.ts';
import { apiFromDocument, ResponseValidator, type Json } from './lib/spec.ts';

class UsageError extends Error {}

async function readDocument(source: string): Promise<Json> {
  let text: string;
  if (/^https?:\/\//.test(source)) {
    const response = await fetch(source, { signal: AbortSignal.timeout(30_000) }).catch((err: unknown) => {
      throw new UsageError(`cannot fetch ${source}: ${(err as Error).message}`);
    });
    if (!response.ok) throw new UsageError(`cannot fetch ${source}: HTTP ${response.status}`);
    text = await response.text();
  } else {
    text = await readFile(source, 'utf8').catch((err: unknown) => {
      throw new UsageError(`cannot read ${source}: ${(err as Error).message}`);
    });
  }
  let doc: Json;
  try {
    doc = text.trimStart().startsWith('{') ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new UsageError(`${source} is neither JSON nor YAML: ${(err as Error).message}`);
  }
  if (typeof doc?.openapi !== 'string' || !String(doc.openapi).startsWith('3.')) throw new UsageError(`${source} is not an OpenAPI 3 document`);
  const external = /"\$ref":"(?!#)/.exec(JSON.stringify(doc));
  if (external) throw new UsageError(`${source} has external $refs: bundle it first (e.g. redocly bundle)`);
  return doc;
}

function baseUrl(target: string, basePath: string): string {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new UsageError(`--target must be a URL, got "${target}"`);
  }
  const path = url.pathname.replace(/\/+$/, '');
  return url.origin + (path === '' ? basePath : path);
}

function token(command: string | undefined): string | undefined {
  if (!command) return undefined;
  let out: string;
  try {
    out = execSync(command, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 60_000 });
  } catch (err) {
    throw new UsageError(`--token-cmd failed: ${(err as Error).message}`);
  }
  const value = out.trim();
  if (!/^[A-Za-z0-9._~+/-]+=*$/.test(value)) throw new UsageError('--token-cmd printed no token (one line, the bearer token only)');
  return value;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      spec: { type: 'string' },
      target: { type: 'string' },
      'token-cmd': { type: 'string' },
      junit: { type: 'string' },
      runs: { type: 'string', default: '20' },
      seed: { type: 'string', default: '20261121' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write('usage: contract-check --spec <file|url> --target <base-url> [--token-cmd <command>] [--junit FILE] [--runs N] [--seed N]\n');
    return 0;
  }
  if (!values.spec || !values.target) throw new UsageError('--spec and --target are required (see --help)');
  const runs = Number(values.runs);
  const seed = Number(values.seed);
  if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) throw new UsageError('--runs must be a positive integer and --seed an integer');

  const started = Date.now();
  const doc = await readDocument(values.spec);
  // The name keys the document's schemas in the validator: a slug of its title.
  const api = apiFromDocument(String(doc.info?.title ?? 'api').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'api', doc, values.spec);
  const base = baseUrl(values.target, api.basePath);
  await fetch(base, { signal: AbortSignal.timeout(10_000) }).catch((err: unknown) => {
    throw new UsageError(`the target ${base} does not answer: ${(err as Error).cause ?? (err as Error).message}`);
  });
  const bearer = token(values['token-cmd']);

  const work = api.operations.map((op) => {
    const requests = sampleRequests(api, op, { token: bearer, spreadClients: false }, runs, seed);
    // A secured operation without its token must answer a documented 401 too.
    if (secured(api, op) && bearer && requests[0]) {
      const { Authorization: _dropped, ...headers } = requests[0].headers;
      requests.push({ ...requests[0], kind: 'no-token', headers });
    }
    return { op, requests };
  });
  const probed = await probe({ apis: [api], validator: new ResponseValidator([api]), name: 'contract-check' }, api, base, work);

  const cases = api.operations.map((op) => {
    const tally = probed.operations.get(op.operationId) ?? { sent: 0, problems: [] };
    return { name: `${op.method} ${op.path} (${op.operationId})`, classname: api.api, failures: tally.problems, requests: tally.sent };
  });
  for (const c of cases) {
    process.stdout.write(`${c.failures.length ? 'FAIL' : 'PASS'} ${c.name}: ${c.requests} requests\n`);
    for (const f of c.failures.slice(0, 5)) process.stdout.write(`     ✗ ${f}\n`);
  }
  const seconds = (Date.now() - started) / 1000;
  if (values.junit) await writeFile(values.junit, junitXml(`${api.api} ${doc.info?.version ?? ''} at ${base}`, cases, seconds));
  const failed = cases.filter((c) => c.failures.length > 0).length;
  const histogram = [...probed.statuses].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ');
  process.stdout.write(
    `contract-check: ${api.api} ${doc.info?.version ?? ''} at ${base}: ${probed.sent} requests (${histogram}), ${cases.length - failed} of ${cases.length} operations conform, seed ${seed}\n`,
  );
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`contract-check: ${err instanceof UsageError ? err.message : err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 2;
  },
);

// The facts of the contract are written once: the error catalogue in ErrorCode.yaml
// (x-error-catalogue) and the limits in each operation's x-rate-limit. Everything else reads them
// from generated/. This test fails on any hand-written copy in the project's code and docs: a
// code-to-status table or map, a list of the codes, a limit stated in figures, and on any mention
// of a code with a status the catalogue does not give it. (Tests are exempt: they assert facts.)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { errorCatalogue } from '../generated/error-catalogue.ts';
import { projectRoot } from './gen/apis.ts';

const CODES = Object.keys(errorCatalogue);
const STATUS = new Map(Object.entries(errorCatalogue).map(([code, e]) => [code, 'status' in e ? e.status : undefined]));
const codeAlternation = CODES.join('|');

/** Where the facts are written (the sources), and what is generated or released from them. */
const SOURCES = [/^generated\//, /^openapi\/released\//, /^openapi\/shared\/schemas\/ErrorCode\.yaml$/];
/** Tests and the contract harness assert the facts (and may name them); the lock file is npm's. */
const EXEMPT = [/\.test\.ts$/, /^contract-tests\//, /^package-lock\.json$/, /\/testing\//, /^bench\//];

/** Every problem of one file's text; `spec` files are judged without their x- extensions, which are the sources. */
function copiesIn(text: string): string[] {
  const problems: string[] = [];
  const mapped = new Set([...text.matchAll(new RegExp(`\\b(${codeAlternation})['"]?\\s*:\\s*[1-5]\\d\\d\\b`, 'g'))].map((m) => m[1]));
  if (mapped.size >= 2) problems.push(`maps ${mapped.size} error codes to statuses: ${[...mapped].slice(0, 4).join(', ')}…`);
  // A line that is nothing but a code, as in a union type, an array or a YAML list.
  const listed = new Set([...text.matchAll(new RegExp(`^\\s*(?:\\||-)?\\s*['"\`]?(${codeAlternation})['"\`]?\\s*[,;]?\\s*$`, 'gm'))].map((m) => m[1]));
  if (listed.size >= 8) problems.push(`lists ${listed.size} of the error codes`);
  const rows = text.split('\n').filter((line) => new RegExp(`^\\s*\\|\\s*[1-5]\\d\\d(\\s*[,/]\\s*[1-5]\\d\\d)*\\s*\\|.*\\b(${codeAlternation})\\b`).test(line));
  if (rows.length >= 2) problems.push(`has a status-to-code table (${rows.length} rows)`);
  for (const m of text.matchAll(new RegExp(`\\b([1-5]\\d\\d)\\s+\`?(${codeAlternation})\\b`, 'g'))) {
    if (STATUS.get(m[2]!) !== Number(m[1])) problems.push(`says ${m[1]} ${m[2]}, the catalogue says ${STATUS.get(m[2]!) ?? 'no status'}`);
  }
  for (const m of text.matchAll(/\b\d+\s*(?:requests?\s*)?(?:per|\/|an?|every)\s*(?:minute|hour)\b/gi)) problems.push(`states a limit in figures: "${m[0]}"`);
  for (const m of text.matchAll(/\b(?:free_trial|pro|business)['"]?\s*:\s*\d+/g)) problems.push(`states a plan's limit: "${m[0]}"`);
  // A table of limits: a header that speaks of requests or limits, rows with a bare figure.
  const tables = text.split(/\n(?!\s*\|)/).filter((block) => /^\s*\|.*\b(requests|limits?)\b.*\|/im.test(block) && /\|\s*\d+\s*\|/.test(block));
  for (const table of tables) problems.push(`has a table of limits: "${table.split('\n').find((line) => line.trim().startsWith('|'))?.trim()}"`);
  return problems;
}

/** An OpenAPI source file without the extensions that are the facts' sources. */
function withoutSources(text: string): string {
  const drop = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(drop);
    if (typeof node !== 'object' || node === null) return node;
    return Object.fromEntries(Object.entries(node).filter(([k]) => !['x-rate-limit', 'x-error-catalogue'].includes(k)).map(([k, v]) => [k, drop(v)]));
  };
  return JSON.stringify(drop(parse(text)), null, 1).replace(/\\n/g, '\n');
}

describe('facts written once', () => {
  it('finds the kinds of copy the project used to have', () => {
    expect(copiesIn("export const ERROR_STATUS = {\n  VALIDATION_ERROR: 400,\n  INVALID_JSON: 400,\n};")).toHaveLength(1);
    expect(copiesIn(`export type ApiErrorCode =\n${CODES.slice(0, 10).map((c) => `  | '${c}'`).join('\n')};`)).toHaveLength(1);
    expect(copiesIn('| status | codes |\n|---|---|\n| 400 | `VALIDATION_ERROR`, `INVALID_JSON` |\n| 401 | `UNAUTHORIZED` |')).toHaveLength(1);
    expect(copiesIn('export const TOOL_LIMITS = { checkSite: 60 };\n// Limited to 5 requests per minute per client address.')).toHaveLength(1);
    expect(copiesIn('export const PLAN_LIMITS = { free_trial: 100, pro: 1000 };')).toHaveLength(2);
    expect(copiesIn('| operation | requests per minute |\n|---|---|\n| `POST /api/tools/check-site` | 60 |')).toHaveLength(1);
    expect(copiesIn('answers `404 JOB_FINISHED`')).toEqual(['says 404 JOB_FINISHED, the catalogue says 409']);
    expect(copiesIn('on a `401 TOKEN_EXPIRED`, ask again; a `409 JOB_FINISHED` means it ended')).toEqual([]);
  });

  it('finds none in the project', () => {
    const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: projectRoot, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.(ts|js|cjs|mjs|md|ya?ml|json|html)$/.test(f))
      .filter((f) => !SOURCES.some((re) => re.test(f)) && !EXEMPT.some((re) => re.test(f)) && !f.includes('/dist/'));
    expect(files.length).toBeGreaterThan(100);
    const found: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = readFileSync(join(projectRoot, file), 'utf8');
      } catch {
        continue; // listed by git but deleted in the work tree
      }
      if (/^openapi\/.*\.ya?ml$/.test(file)) text = withoutSources(text);
      for (const problem of copiesIn(text)) found.push(`${file}: ${problem}`);
    }
    expect(found).toEqual([]);
  });

  it('the server\'s limits module holds no figure of its own', () => {
    const limits = readFileSync(join(projectRoot, 'server/ratelimit/limits.ts'), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    expect(limits).toMatch(/from '\.\.\/\.\.\/generated\/rate-limits\.ts'/);
    expect([...limits.matchAll(/\b\d+\b/g)].map((m) => m[0]).filter((n) => n !== '1000')).toEqual([]);
  });
});

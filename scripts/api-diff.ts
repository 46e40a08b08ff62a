#!/usr/bin/env node
// The breaking-change check, with `redocly diff` and its diff-recommended rules. Fails (exit 1) on
// a change rated major unless the major of info.version was raised; the error catalogue may gain
// codes (the compatibility policy: clients act on the HTTP status of a code they do not know).
//   npm run diff:api                          both APIs, freshly bundled, against openapi/released/
//   npm run diff:api -- --release             make the current bundles the released baseline
//   api-diff <base> <head> [--format markdown]   any two documents (files or URLs, JSON or YAML)
// --format markdown prints a report fit for a pull-request comment; the default is plain lines.
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { apis, bundleApi, projectRoot, redocly } from './gen/apis.ts';
import { markdownReport, readablePointer, textReport, type Change, type DiffResult, type DiffVerdict } from './diff/report.ts';

export type { DiffResult, DiffVerdict };

export const releasedDir = join(projectRoot, 'openapi/released');

/** The rules: Redocly's recommended diff rules rate every change major, minor or patch. */
const DIFF_RULES = 'extends:\n  - diff-recommended\n';

interface RedoclyDiffReport {
  infoVersions: { base: string; revision: string };
  bump?: DiffResult['bump'];
  changes: {
    path: string;
    kind: string;
    impact: Change['impact'];
    property?: string;
    verdicts: DiffVerdict[];
    base?: { pointer?: string };
    revision?: { pointer?: string };
  }[];
}

const major = (version: string): number => Number.parseInt(version.replace(/^v/, ''), 10);

/**
 * Changes the rules rate major that the APIs' compatibility policy allows in a minor version:
 * the error catalogue may gain codes (clients act on the HTTP status of a code they do not know);
 * paths and link targets may be longer (names are bytes: a path beyond 4096 bytes, left out of
 * a backup before 1.1, now appears whole).
 */
const ALLOWED_BY_POLICY: readonly { ruleId: string; pointer: string }[] = [
  { ruleId: 'enum-values-added', pointer: '#/components/schemas/ErrorCode/enum' },
  { ruleId: 'schema-constraint-changed', pointer: '#/components/schemas/RelativePath/maxLength' },
  { ruleId: 'schema-constraint-changed', pointer: '#/components/schemas/FileEntry/properties/link_target/maxLength' },
];

function allowedByPolicy(v: DiffVerdict): boolean {
  return ALLOWED_BY_POLICY.some((a) => a.ruleId === v.ruleId && a.pointer === v.location?.pointer);
}

/** A local copy of a document given by URL (redocly reads files). */
async function local(source: string, dir: string): Promise<string> {
  if (!/^https?:\/\//.test(source)) return source;
  const response = await fetch(source, { signal: AbortSignal.timeout(30_000) });
  if (!response.ok) throw new Error(`cannot fetch ${source}: HTTP ${response.status}`);
  const file = join(dir, `${Math.random().toString(36).slice(2)}-${basename(new URL(source).pathname) || 'openapi.json'}`);
  await writeFile(file, await response.text());
  return file;
}

/** Rates the changes from the document at `basePath` to the one at `revisionPath` (files or URLs, JSON or YAML). */
export async function diffDocuments(basePath: string, revisionPath: string): Promise<DiffResult> {
  const dir = await mkdtemp(join(tmpdir(), 'api-diff-'));
  try {
    const report = join(dir, 'report.json');
    const config = join(dir, 'redocly-diff.yaml');
    await writeFile(config, DIFF_RULES);
    const [base, revision] = [await local(basePath, dir), await local(revisionPath, dir)];
    await redocly(['diff', base, revision, '--config', config, '--format', 'json', '--fail-on', 'none', '-o', report], projectRoot);
    const parsed = JSON.parse(await readFile(report, 'utf8')) as RedoclyDiffReport;
    const seen = new Map<string, Change>();
    const breaking: DiffVerdict[] = [];
    for (const c of parsed.changes) {
      const pointer = c.revision?.pointer ?? c.base?.pointer ?? c.path;
      const key = `${c.kind}|${c.property ?? ''}|${pointer}`;
      if (seen.has(key)) continue;
      const verdicts = c.verdicts.filter((v) => v.impact === c.impact);
      const allowed = c.impact === 'major' && verdicts.length > 0 && verdicts.every(allowedByPolicy);
      seen.set(key, { impact: c.impact, kind: c.kind, where: readablePointer(pointer), property: c.property, messages: verdicts.map((v) => `${v.message} (${v.ruleId})`), allowed });
      if (c.impact === 'major' && !allowed) {
        breaking.push(...(verdicts.length ? verdicts.filter((v) => !allowedByPolicy(v)) : [{ ruleId: c.kind, impact: 'major', message: `${c.kind}: ${c.path}` } as DiffVerdict]));
      }
    }
    const title = (parse(await readFile(revision, 'utf8')) as { info?: { title?: string } }).info?.title ?? basename(revisionPath);
    const { base: from, revision: to } = parsed.infoVersions;
    const raised = major(to) > major(from);
    // A major rating that only comes from changes the policy allows needs a minor release.
    const bump = parsed.bump === 'major' && breaking.length === 0 ? 'minor' : (parsed.bump ?? 'none');
    return { title, baseVersion: from, revisionVersion: to, bump, breaking, changes: [...seen.values()], ok: breaking.length === 0 || raised };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Where a released version is kept once a newer one replaces it: `<api>@<version>.openapi.json`. */
export const archivedName = (api: string, version: string): string => `${api}@${version}.openapi.json`;

async function release(): Promise<void> {
  for (const api of apis) {
    const doc = await bundleApi(projectRoot, api);
    const released = join(releasedDir, `${api.name}.openapi.json`);
    if (existsSync(released)) {
      const previous = (JSON.parse(await readFile(released, 'utf8')) as { info: { version: string } }).info.version;
      if (previous !== doc.info.version) await copyFile(released, join(releasedDir, archivedName(api.name, previous)));
    }
    await writeFile(released, `${JSON.stringify(doc, null, 2)}\n`);
    console.log(`${api.alias}: released ${doc.info.version} as openapi/released/${api.name}.openapi.json`);
  }
}

/** Both APIs, freshly bundled, against their released copies. */
async function project(format: string): Promise<DiffResult[]> {
  const dir = await mkdtemp(join(tmpdir(), 'api-diff-'));
  const results: DiffResult[] = [];
  try {
    for (const api of apis) {
      const released = join(releasedDir, `${api.name}.openapi.json`);
      if (!existsSync(released)) throw new Error(`${api.alias}: no released copy at openapi/released/${api.name}.openapi.json; cut one with \`npm run diff:api -- --release\``);
      const current = join(dir, `${api.name}.openapi.json`);
      await writeFile(current, JSON.stringify(await bundleApi(projectRoot, api)));
      const result = await diffDocuments(released, current);
      results.push(format === 'markdown' ? result : { ...result, title: api.alias });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { release: { type: 'boolean', default: false }, format: { type: 'string', default: 'text' }, help: { type: 'boolean', default: false } },
  });
  if (values.help) {
    console.log('usage: api-diff <base-spec> <head-spec> [--format text|markdown]   (in the project: npm run diff:api [-- --release])');
    return;
  }
  if (!['text', 'markdown'].includes(values.format)) throw new Error(`--format must be text or markdown, got "${values.format}"`);
  if (values.release) return release();
  if (positionals.length !== 0 && positionals.length !== 2) throw new Error('give two documents (base and head), or none to check the project against openapi/released/');
  const results = positionals.length === 2 ? [await diffDocuments(positionals[0]!, positionals[1]!)] : await project(values.format);
  console.log(results.map((r) => (values.format === 'markdown' ? markdownReport(r) : textReport(r))).join('\n'));
  if (!results.every((r) => r.ok)) process.exitCode = 1;
}

if (import.meta.main) {
  await main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 2;
  });
}

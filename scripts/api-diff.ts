// `npm run diff:api`: compares each API, freshly bundled, with its last released copy in
// openapi/released/ using `redocly diff` (diff-recommended rules) and fails on a change that
// needs a major version unless the major of info.version was raised.
//   node scripts/api-diff.ts             check both APIs
//   node scripts/api-diff.ts --release   make the current bundles the released baseline
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { apis, bundleApi, projectRoot, redocly } from './gen/apis.ts';

export const releasedDir = join(projectRoot, 'openapi/released');
const diffConfig = join(releasedDir, 'redocly-diff.yaml');

export interface DiffVerdict {
  ruleId: string;
  impact: 'major' | 'minor' | 'patch';
  message: string;
  location?: { pointer?: string };
}

export interface DiffResult {
  baseVersion: string;
  revisionVersion: string;
  bump: 'major' | 'minor' | 'patch' | 'none';
  /** Changes rated major by the rules. */
  breaking: DiffVerdict[];
  /** True when there is no major change, or the major of info.version was raised. */
  ok: boolean;
}

interface RedoclyDiffReport {
  infoVersions: { base: string; revision: string };
  bump?: DiffResult['bump'];
  changes: { path: string; kind: string; impact: string; verdicts: DiffVerdict[] }[];
}

const major = (version: string): number => Number.parseInt(version.replace(/^v/, ''), 10);

/**
 * Changes the rules rate major that the APIs' compatibility policy allows in a minor version:
 * the error catalogue may gain codes (clients act on the HTTP status of a code they do not know).
 */
const ALLOWED_BY_POLICY: readonly { ruleId: string; pointer: string }[] = [
  { ruleId: 'enum-values-added', pointer: '#/components/schemas/ErrorCode/enum' },
];

function allowedByPolicy(v: DiffVerdict): boolean {
  return ALLOWED_BY_POLICY.some((a) => a.ruleId === v.ruleId && a.pointer === v.location?.pointer);
}

/** Rates the changes from the document at `basePath` to the one at `revisionPath` (JSON or YAML files). */
export async function diffDocuments(basePath: string, revisionPath: string): Promise<DiffResult> {
  const dir = await mkdtemp(join(tmpdir(), 'api-diff-'));
  try {
    const report = join(dir, 'report.json');
    await redocly(['diff', basePath, revisionPath, '--config', diffConfig, '--format', 'json', '--fail-on', 'none', '-o', report], projectRoot);
    const parsed = JSON.parse(await readFile(report, 'utf8')) as RedoclyDiffReport;
    const breaking = parsed.changes
      .filter((c) => c.impact === 'major')
      .flatMap((c): DiffVerdict[] => {
        const verdicts = c.verdicts.filter((v) => v.impact === 'major');
        return verdicts.length ? verdicts : [{ ruleId: c.kind, impact: 'major', message: `${c.kind}: ${c.path}` }];
      })
      .filter((v) => !allowedByPolicy(v));
    const { base, revision } = parsed.infoVersions;
    const raised = major(revision) > major(base);
    return { baseVersion: base, revisionVersion: revision, bump: parsed.bump ?? 'none', breaking, ok: breaking.length === 0 || raised };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { release: { type: 'boolean', default: false } } });
  const dir = await mkdtemp(join(tmpdir(), 'api-diff-'));
  try {
    for (const api of apis) {
      const doc = await bundleApi(projectRoot, api);
      const released = join(releasedDir, `${api.name}.openapi.json`);
      if (!values.release && !existsSync(released)) {
        console.error(`${api.alias}: no released copy at openapi/released/${api.name}.openapi.json; cut one with \`npm run diff:api -- --release\``);
        process.exitCode = 1;
        continue;
      }
      if (values.release) {
        await writeFile(released, `${JSON.stringify(doc, null, 2)}\n`);
        console.log(`${api.alias}: released ${doc.info.version} as openapi/released/${api.name}.openapi.json`);
        continue;
      }
      const current = join(dir, `${api.name}.openapi.json`);
      await writeFile(current, JSON.stringify(doc));
      const result = await diffDocuments(released, current);
      const changes = result.bump === 'none' ? 'no changes' : `changes need a ${result.bump} release`;
      const head = `${api.alias}: ${result.baseVersion} → ${result.revisionVersion}, ${changes}`;
      if (result.ok) {
        console.log(`${head}${result.breaking.length ? ` (${result.breaking.length} breaking, major raised)` : ''}: ok`);
        continue;
      }
      console.error(`${head}; breaking changes without a new major version:`);
      for (const v of result.breaking) console.error(`  ✖ ${v.message} (${v.ruleId}) at ${v.location?.pointer ?? '?'}`);
      process.exitCode = 1;
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  await main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}

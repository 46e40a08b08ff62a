// The CI checks as another repository gets them: `npm pack` of checks/, installed into an empty
// project (dependencies from npm's cache or registry), its two commands run there with npx.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolsOperations } from '../generated/tools-handlers.ts';
import { exec, packAndInstall } from '../scripts/testing/exec.ts';
import { startHarness, type Harness } from '../server/testing/harness.ts';

const CHECKS = fileURLToPath(new URL('.', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

let work: string;
let app: string;
let h: Harness;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'api-checks-'));
  ({ app } = await packAndInstall(CHECKS, work, ['--save-dev']));
  h = await startHarness();
}, 180_000);

afterAll(async () => {
  await h?.cleanup();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the packed CI checks', () => {
  it('pin the same versions of their dependencies as the project, and its API version', async () => {
    const root = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    const checks = JSON.parse(await readFile(join(CHECKS, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> };
    for (const [name, version] of Object.entries(checks.dependencies)) expect(version, name).toBe(root.dependencies[name] ?? root.devDependencies[name]);
    const doc = JSON.parse(await readFile(join(ROOT, 'generated/backup.openapi.json'), 'utf8')) as { info: { version: string } };
    expect(checks.version).toBe(doc.info.version);
  });

  it('run api-diff and contract-check with npx in another project', async () => {
    const breaking = join(work, 'head.json');
    const base = JSON.parse(await readFile(join(ROOT, 'openapi/released/tools.openapi.json'), 'utf8')) as { paths: Record<string, unknown> };
    delete base.paths['/api/tools/ip-info'];
    await writeFile(breaking, JSON.stringify(base));
    const diff = await exec('npx', ['--no-install', 'api-diff', join(ROOT, 'openapi/released/tools.openapi.json'), breaking, '--format', 'markdown'], { cwd: app });
    expect(diff.out).toMatch(/❌ \d+ breaking change/);
    expect(diff.code).toBe(1);

    const check = await exec('npx', ['--no-install', 'contract-check', '--spec', join(ROOT, 'generated/tools.openapi.json'), '--target', h.base, '--runs', '4'], { cwd: app });
    const count = Object.keys(toolsOperations).length;
    expect(check.out).toContain(`${count} of ${count} operations conform`);
    expect(check.code).toBe(0);
  });
});

// contract-check as a CI job runs it: the command (npx from the checkout) against a real server
// on loopback, with a token from --token-cmd and a JUnit report; then against a broken target
// (the same server behind a proxy that drops X-Request-Id), which it must fail; then with
// nothing listening, which is a run that could not happen (exit 2).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolsOperations } from '../generated/tools-handlers.ts';
import { exec, type Ran } from '../scripts/testing/exec.ts';
import { startHarness, type Harness } from '../server/testing/harness.ts';
import { startTamperProxy, type TamperProxy } from './tamper/proxy.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KEY = { apiKey: 'key_contract_check', secret: 'contract-check-secret-0123456789' };

let h: Harness;
let broken: TamperProxy;
let work: string;

/** Runs the command; `npx` as a CI job in a checkout would (slower to start), else the file itself. */
function check(args: string[], via: 'npx' | 'node' = 'node'): Promise<Ran> {
  if (via === 'npx') return exec('npx', ['--no-install', 'contract-check', ...args], { cwd: ROOT });
  return exec(process.execPath, [join(ROOT, 'contract-tests/cli.ts'), ...args], { cwd: ROOT });
}

const tokenCmd = (origin: string): string =>
  `curl -s -X POST ${origin}/api/v1/auth/token -H 'Content-Type: application/json' -d '{"api_key":"${KEY.apiKey}","secret":"${KEY.secret}"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).data.access_token'`;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'contract-check-'));
  h = await startHarness({ BACKUP_BOOTSTRAP_API_KEY: KEY.apiKey, BACKUP_BOOTSTRAP_SECRET: KEY.secret, BACKUP_BOOTSTRAP_PLAN: 'business' });
  broken = await startTamperProxy(h.base, 'drop-header');
}, 60_000);

afterAll(async () => {
  await broken?.stop();
  await h?.cleanup();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('contract-check', () => {
  it('passes a conforming deployment of both APIs and writes a JUnit report', async () => {
    const junit = join(work, 'backup.xml');
    const backup = await check(['--spec', 'generated/backup.openapi.json', '--target', h.base, '--token-cmd', tokenCmd(h.base), '--runs', '8', '--junit', junit], 'npx');
    expect(backup.out).toMatch(/16 of 16 operations conform/);
    expect(backup.code).toBe(0);
    const xml = await readFile(junit, 'utf8');
    expect(xml).toMatch(/<testsuite name="backup-api 1\.1\.0 at http:\/\/127\.0\.0\.1:\d+\/api\/v1" tests="16" failures="0"/);
    expect(xml.match(/<testcase /g)).toHaveLength(16);
    // The token was used: secured operations got past authentication.
    expect(backup.out).toMatch(/\b20\d×\d+/);

    const tools = await check(['--spec', join(ROOT, 'generated/tools.openapi.json'), '--target', h.base, '--runs', '8']);
    const toolsCount = Object.keys(toolsOperations).length;
    expect(tools.out).toContain(`${toolsCount} of ${toolsCount} operations conform`);
    expect(tools.code).toBe(0);
  }, 180_000);

  it('fails a deployment that breaks the contract, naming what and where', async () => {
    const junit = join(work, 'broken.xml');
    const result = await check(['--spec', 'generated/tools.openapi.json', '--target', broken.origin, '--runs', '4', '--junit', junit]);
    expect(result.code).toBe(1);
    expect(result.out).toMatch(/FAIL POST \/api\/tools\/check-site/);
    expect(result.out).toMatch(/required header X-Request-Id missing/);
    expect(await readFile(junit, 'utf8')).toContain(`failures="${Object.keys(toolsOperations).length}"`);
  });

  it('exits 2 when it cannot run: no target, or a document that is not OpenAPI', async () => {
    const closed = await check(['--spec', 'generated/tools.openapi.json', '--target', 'http://127.0.0.1:9']);
    expect(closed.code).toBe(2);
    expect(closed.out).toMatch(/does not answer/);
    const notSpec = await check(['--spec', 'package.json', '--target', h.base]);
    expect(notSpec.code).toBe(2);
    expect(notSpec.out).toMatch(/not an OpenAPI 3 document/);
  });
});

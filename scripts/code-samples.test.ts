// Every operation's x-codeSamples (curl and the TypeScript SDK), as the reference shows them,
// run against the mock: the curl samples in bash with a token the mock minted, the SDK samples
// imported as modules (after a type-check); each must get a 2xx answer. The only edits: the
// server URL becomes the mock's, and example ids become ids of jobs the mock holds.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMock, type RunningMock } from '../mock/start.ts';
import { projectRoot } from './gen/apis.ts';
import type { CodeSample } from './gen/code-samples.ts';
import { exec } from './testing/exec.ts';

interface Sampled {
  api: 'backup' | 'tools';
  operationId: string;
  samples: CodeSample[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const BACKUP_ID = /bkp_[0-9A-HJKMNP-TV-Z]{26}/g;
const RESTORE_ID = /rst_[0-9A-HJKMNP-TV-Z]{26}/g;
const SDK_ENTRY = join(projectRoot, 'sdk/src/index.ts');

let mock: RunningMock;
let work: string;
let token: string;
const ids = { backup: '', restore: '' };
const operations: Sampled[] = [];

async function api(path: string, init: RequestInit = {}): Promise<{ data: { id: string; access_token: string } }> {
  const headers = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
  const response = await fetch(mock.backupUrl + path, { ...init, headers });
  expect(response.status, path).toBeLessThan(300);
  return (await response.json()) as { data: { id: string; access_token: string } };
}

/** A backup that is still running: what a cancel sample needs. */
const runningBackup = async (): Promise<string> => (await api('/backup', { method: 'POST', body: JSON.stringify({ source: '/srv/cancel-me' }) })).data.id;

function forMock(sample: Sampled, source: string, backupId: string): string {
  const server = sample.api === 'backup' ? ['http://localhost:8080/api/v1', mock.backupUrl] : ['http://localhost:8080', mock.toolsUrl];
  return source.replaceAll(server[0]!, server[1]!).replace(BACKUP_ID, backupId).replace(RESTORE_ID, ids.restore);
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'code-samples-'));
  mock = await startMock({ backupPort: 0, toolsPort: 0, jobSeconds: 1.5 });
  token = (await api('/auth/token', { method: 'POST', body: JSON.stringify({ api_key: 'key_samples', secret: 'samples-secret-0123456789' }) })).data.access_token;
  ids.backup = (await api('/backup', { method: 'POST', body: JSON.stringify({ source: '/srv/samples' }) })).data.id;
  await new Promise((resolve) => setTimeout(resolve, 1600));
  ids.restore = (await api('/restore', { method: 'POST', body: JSON.stringify({ backup_id: ids.backup, target_path: '/srv/restored' }) })).data.id;
  for (const name of ['backup', 'tools'] as const) {
    const doc = JSON.parse(await readFile(join(projectRoot, `generated/${name}.openapi.json`), 'utf8')) as { paths: Record<string, Record<string, { operationId: string; 'x-codeSamples'?: CodeSample[] }>> };
    for (const item of Object.values(doc.paths)) {
      for (const method of METHODS) {
        const op = item[method];
        if (op) operations.push({ api: name, operationId: op.operationId, samples: op['x-codeSamples'] ?? [] });
      }
    }
  }
}, 60_000);

afterAll(async () => {
  await mock?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('code samples', () => {
  it('every operation has a curl and a TypeScript SDK sample', () => {
    expect(operations.length).toBeGreaterThan(10);
    for (const op of operations) expect(op.samples.map((s) => s.label), op.operationId).toEqual(['curl', 'SDK']);
    console.log(`code samples: ${operations.length} operations, ${operations.length * 2} samples`);
  });

  it('the curl samples answer 2xx from the mock', async () => {
    for (const op of operations) {
      const backupId = op.operationId === 'cancelBackup' ? await runningBackup() : ids.backup;
      const script = `curl() { command curl -sS -o /dev/null -w '%{http_code}' "$@"; }\n${forMock(op, op.samples[0]!.source, backupId)}`;
      const ran = await exec('bash', ['-c', script], { env: { TOKEN: token } });
      expect(ran.out, `${op.operationId}: ${op.samples[0]!.source}`).toMatch(/^2\d\d$/);
    }
  });

  it('the SDK samples type-check against the SDK and run against the mock', async () => {
    const files = operations.map((op) => join(work, `${op.operationId}.ts`));
    for (const [i, op] of operations.entries()) await writeFile(files[i]!, `declare const process: { env: Record<string, string | undefined> };\n${op.samples[1]!.source}\nexport {};\n`);
    await writeFile(join(work, 'package.json'), JSON.stringify({ type: 'module' }));
    await writeFile(
      join(work, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'es2022', module: 'nodenext', lib: ['es2022', 'dom'], types: [], strict: true, noEmit: true, allowImportingTsExtensions: true, paths: { '@backup-service/client': [SDK_ENTRY] } },
        include: ['*.ts'],
      }),
    );
    const checked = await exec(process.execPath, [join(projectRoot, 'node_modules/typescript/bin/tsc'), '-p', work]);
    expect(checked.out).toBe('');

    process.env.BACKUP_API_KEY = 'key_samples';
    process.env.BACKUP_SECRET = 'samples-secret-0123456789';
    const printed: unknown[] = [];
    const log = console.log;
    console.log = (value: unknown) => void printed.push(value);
    try {
      for (const [i, op] of operations.entries()) {
        const backupId = op.operationId === 'cancelBackup' ? await runningBackup() : ids.backup;
        const source = forMock(op, op.samples[1]!.source, backupId).replace("from '@backup-service/client'", `from '${pathToFileURL(SDK_ENTRY).href}'`);
        const file = files[i]!.replace(/\.ts$/, '.run.ts');
        await writeFile(file, `${source}\nexport {};\n`);
        await expect(import(pathToFileURL(file).href), op.operationId).resolves.toBeDefined();
      }
    } finally {
      console.log = log;
    }
    // Each sample printed what it got.
    expect(printed.filter((p) => typeof p === 'object' && p !== null)).toHaveLength(operations.length);
  });
});

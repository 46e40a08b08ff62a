// The SDK as a frontend gets it: `npm pack` of sdk/, installed into an empty project (npm's cache
// or registry for openapi-fetch), where a sample type-checks with the project's TypeScript and
// then runs against the mock server.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMock, type RunningMock } from '../../mock/start.ts';
import { exec, packAndInstall } from '../../scripts/testing/exec.ts';

const SDK = fileURLToPath(new URL('..', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

let work: string;
let app: string;
let tarball: string;
let mock: RunningMock;

const SAMPLE = `import { ApiClientError, createBackupClient, errorInfo, startBackup, type BackupJob } from '@backup-service/client';

const client = createBackupClient({ baseUrl: process.env.API_URL!, apiKey: 'key_sample', secret: 'sample-secret-0123456789' });
const seen: BackupJob['status'][] = [];
const job: BackupJob = await startBackup(client, { source: '/home/ann/documents' }, { intervalMs: 50, onUpdate: (j) => seen.push(j.status) });
const files = await client.GET('/files', { params: { query: { backup_id: job.id, limit: 10 } } });
try {
  await client.GET('/backup/{id}', { params: { path: { id: 'bkp_01M7W3SPMRMFAYEKW7NHTX8GH8' } } });
} catch (error) {
  if (error instanceof ApiClientError && error.code === 'BACKUP_NOT_FOUND') {
    console.log(JSON.stringify({ status: job.status, seen, files: files.data!.data.items.length, code: error.code, action: errorInfo(error.code)?.action }));
  } else throw error;
}
`;

/** Strict, browser-like settings a frontend project would use; no Node types. */
const TSCONFIG = {
  compilerOptions: {
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    lib: ['es2022', 'dom'],
    types: [],
    strict: true,
    noEmit: true,
    noUncheckedIndexedAccess: true,
  },
  include: ['*.ts'],
};

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'sdk-package-'));
  ({ tarball, app } = await packAndInstall(SDK, work));
  mock = await startMock({ backupPort: 0, toolsPort: 0, jobSeconds: 0.3 });
}, 180_000);

afterAll(async () => {
  await mock?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the packed SDK', () => {
  it('is versioned with the spec', async () => {
    const pkg = JSON.parse(await readFile(join(SDK, 'package.json'), 'utf8')) as { version: string };
    for (const api of ['backup', 'tools']) {
      const doc = JSON.parse(await readFile(join(ROOT, `generated/${api}.openapi.json`), 'utf8')) as { info: { version: string } };
      expect(pkg.version, api).toBe(doc.info.version);
    }
    expect(tarball).toMatch(new RegExp(`backup-service-client-${pkg.version.replace(/\./g, '\\.')}\\.tgz$`));
  });

  it('installs with openapi-fetch as its only runtime dependency', async () => {
    const manifest = JSON.parse(await readFile(join(app, 'node_modules/@backup-service/client/package.json'), 'utf8')) as Record<string, Record<string, unknown>>;
    expect(manifest.dependencies).toEqual({ 'openapi-fetch': expect.any(String) });
    // msw, for the ./msw handlers, is an optional peer: not installed unless the app has it.
    expect(Object.keys(manifest.peerDependencies!)).toEqual(['msw']);
    expect(manifest.peerDependenciesMeta).toEqual({ msw: { optional: true } });
    const installed: string[] = [];
    for (const name of await readdir(join(app, 'node_modules'))) {
      if (name.startsWith('.')) continue;
      if (name.startsWith('@')) for (const inner of await readdir(join(app, 'node_modules', name))) installed.push(`${name}/${inner}`);
      else installed.push(name);
    }
    // openapi-typescript-helpers is openapi-fetch's own (type-only) dependency.
    expect(installed.sort()).toEqual(['@backup-service/client', 'openapi-fetch', 'openapi-typescript-helpers']);
  });

  it('type-checks a sample in the empty project, and refuses one that breaks the API types', async () => {
    await writeFile(join(app, 'tsconfig.json'), JSON.stringify(TSCONFIG));
    await writeFile(join(app, 'sample.ts'), `declare const process: { env: Record<string, string | undefined> };\n${SAMPLE}`);
    await writeFile(join(app, 'broken.ts'), `import { createBackupClient } from '@backup-service/client';
const client = createBackupClient({ baseUrl: '/api/v1', apiKey: 'k', secret: 's' });
await client.POST('/backup', { body: { source: '/x', options: { compression: 'rar' } } });
await client.GET('/backups');
`);
    const checked = await exec(process.execPath, [TSC, '-p', app], { cwd: app });
    await rm(join(app, 'broken.ts'));
    const errors = checked.stdout.split('\n').filter((line) => /error TS/.test(line));
    expect(errors.filter((line) => !line.startsWith('broken.ts'))).toEqual([]);
    expect(errors.some((line) => /^broken\.ts\(3,.*rar/.test(line))).toBe(true);
    expect(errors.some((line) => /^broken\.ts\(4,/.test(line))).toBe(true);
  });

  it('runs the sample from the tarball against the mock server', async () => {
    await writeFile(join(app, 'sample.ts'), SAMPLE.replace('process.env.API_URL!', 'process.env.API_URL as string'));
    const ran = await exec(process.execPath, [join(app, 'sample.ts')], { cwd: app, env: { API_URL: mock.backupUrl } });
    expect(ran.code, ran.out).toBe(0);
    const result = JSON.parse(ran.out.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(result).toMatchObject({ status: 'completed', code: 'BACKUP_NOT_FOUND' });
    expect(result.files).toBeGreaterThan(0);
    expect(String(result.action)).toMatch(/GET \/backup/);
  });
});

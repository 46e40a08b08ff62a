// The typed clients against the real server: createApp on an ephemeral loopback port, a temp
// DATA_DIR, allowed root and bootstrap key.
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type BackupServiceApp } from '../../server/app.ts';
import { loadConfig } from '../../server/config.ts';
import { ApiClientError, createBackupClient, createToolsClient, startBackup, startRestore, type BackupClient } from '../src/index.ts';
import { rejection, sendJson, startScriptedServer, type ScriptedServer } from './test-server.ts';

const API_KEY = 'key_client_test';
const SECRET = 'client-test-secret-0123456789';

let dir: string;
let root: string;
let service: BackupServiceApp;
let server: Server;
let origin: string;
let backup: BackupClient;
let site: ScriptedServer;

beforeAll(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'client-server-')));
  root = join(dir, 'root');
  await mkdir(join(root, 'docs/nested'), { recursive: true });
  await writeFile(join(root, 'docs/a.txt'), 'alpha\n');
  await writeFile(join(root, 'docs/nested/b.txt'), 'bravo '.repeat(1000));
  const config = loadConfig({
    DATA_DIR: join(dir, 'data'),
    BACKUP_ALLOWED_ROOTS: root,
    PORT: '0',
    HOST: '127.0.0.1',
    BACKUP_BOOTSTRAP_API_KEY: API_KEY,
    BACKUP_BOOTSTRAP_SECRET: SECRET,
    BACKUP_BOOTSTRAP_PLAN: 'business',
    BACKUP_REPOSITORY_PASSWORD: 'client-test-repository-password',
    CHECK_SITE_ALLOW_PRIVATE: 'true',
  });
  service = await createApp(config, { logger: pino({ level: 'silent' }) });
  server = await service.listen(0, '127.0.0.1');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  backup = createBackupClient({ baseUrl: `${origin}/api/v1`, apiKey: API_KEY, secret: SECRET });
  site = await startScriptedServer((_req, res) => sendJson(res, 200, { ok: true }));
}, 60_000);

afterAll(async () => {
  await site?.close();
  await service?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('clients against the real server', () => {
  it('backs up, lists and restores with the polling helpers and the typed client', async () => {
    const job = await startBackup(backup, { source: join(root, 'docs'), destination: 'local' }, { intervalMs: 100 });
    expect(job.status).toBe('completed');
    expect(backup.currentToken()).toBeTruthy();

    const files = await backup.GET('/files', { params: { query: { backup_id: job.id } } });
    const paths = files.data!.data.items.map((f) => f.path);
    expect(paths.filter((p) => p !== '').sort()).toEqual(['a.txt', 'nested', 'nested/b.txt']);
    expect(job.files_backed_up).toBe(2); // regular files and symlinks; the directory is not counted
    const nested = await backup.GET('/files', { params: { query: { backup_id: job.id, prefix: 'nested/' } } });
    expect(nested.data!.data.items.map((f) => f.path)).toEqual(['nested/b.txt']);

    const listed = await backup.GET('/backup', { params: { query: { limit: 5 } } });
    expect(listed.data!.data.items.map((j) => j.id)).toContain(job.id);

    const seen: string[] = [];
    const state = await startRestore(
      backup,
      { backup_id: job.id, target_path: join(root, 'restored') },
      { intervalMs: 100, onUpdate: (r) => seen.push(r.status) },
    );
    expect(seen.at(-1)).toBe('completed');
    expect(state.status).toBe('completed');
    expect(await readFile(join(root, 'restored/nested/b.txt'), 'utf8')).toBe('bravo '.repeat(1000));
  });

  it('surfaces the server\'s errors with code, details and the request id', async () => {
    const missing = await rejection(
      backup.POST('/backup', { body: { source: join(root, 'nope') }, headers: { 'X-Request-Id': 'web-7:missing' } }),
    );
    expect(missing).toMatchObject({ status: 422, code: 'INVALID_SOURCE', details: { path: join(root, 'nope') }, requestId: 'web-7:missing' });

    const outside = await rejection(backup.POST('/backup', { body: { source: '/etc' } }));
    expect(outside).toMatchObject({ status: 403, code: 'SOURCE_NOT_ALLOWED' });
    expect(outside.requestId).toMatch(/^req_/);

    const invalid = await rejection(backup.POST('/backup', { body: { source: 'relative' } }));
    expect(invalid).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    expect(invalid.details.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path: '/body/source' })]));

    const unknown = await rejection(
      backup.GET('/backup/{id}', { params: { path: { id: 'bkp_01M7W3SPMRMFAYEKW7NHTX8GH8' } } }),
    );
    expect(unknown).toMatchObject({ status: 404, code: 'BACKUP_NOT_FOUND', attempts: 1 });
  });

  it('reports wrong credentials as INVALID_CREDENTIALS', async () => {
    const wrong = createBackupClient({ baseUrl: `${origin}/api/v1`, apiKey: API_KEY, secret: 'not-the-secret-at-all' });
    const error = await rejection(wrong.GET('/backup'));
    expect(error).toMatchObject({ status: 401, code: 'INVALID_CREDENTIALS' });
    // The public status needs no token.
    expect((await wrong.GET('/status')).data!.data.status).toMatch(/^(ok|degraded)$/);
  });

  it('uses the public tools, and hands back a 429 whose Retry-After is beyond its patience', async () => {
    const tools = createToolsClient({ baseUrl: origin, retry: { maxRetryAfterMs: 500 } });
    const ip = await tools.GET('/api/tools/ip-info');
    expect(ip.data!.data).toMatchObject({ ip: '127.0.0.1', version: 4 });

    const check = await tools.POST('/api/tools/check-site', { body: { url: `${site.origin}/health` } });
    expect(check.data!.data).toMatchObject({ status: 'up', http_status: 200 });

    const first = await tools.POST('/api/newsletter/subscribe', { body: { email: 'Ann@Example.COM', source: 'client-test' } });
    const again = await tools.POST('/api/newsletter/subscribe', { body: { email: 'Ann@example.com', source: 'client-test' } });
    expect([first.response.status, again.response.status]).toEqual([201, 200]);

    const message = { name: 'Ann', email: 'ann@example.com', subject: 'Hello', message: 'A question.' };
    // Limits count in clock-aligned minutes: a burst that crossed into the next minute would start afresh.
    const toNextMinute = 60_000 - (Date.now() % 60_000);
    if (toNextMinute < 10_000) await new Promise((resolve) => setTimeout(resolve, toNextMinute + 100));
    const statuses: number[] = [];
    let limited: ApiClientError | undefined;
    for (let i = 0; i < 6 && !limited; i += 1) {
      try {
        const sent = await tools.POST('/api/contacts/{type}', { params: { path: { type: 'support' } }, body: message });
        statuses.push(sent.response.status);
      } catch (error) {
        limited = error as ApiClientError;
      }
    }
    expect(statuses).toEqual([201, 201, 201, 201, 201]);
    expect(limited).toBeInstanceOf(ApiClientError);
    expect(limited).toMatchObject({ status: 429, code: 'RATE_LIMITED', attempts: 1 });
    expect(limited!.retryAfterMs).toBeGreaterThan(500);
  });
});

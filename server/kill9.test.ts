import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './testing/harness.ts';
import { startPostgres, type PostgresServer } from './testing/services/postgres.ts';

const LEASE_MS = 3000;

describe('an instance killed with SIGKILL mid-job', () => {
  let pg: PostgresServer;
  let dir: string;
  let survivor: Harness | undefined;
  beforeAll(async () => {
    pg = await startPostgres();
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'kill9-')));
  });
  afterAll(async () => {
    await survivor?.stop();
    await pg?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('loses nothing: another instance records the job INTERRUPTED within the lease, and the next backup restores byte-identical', async () => {
    const env = {
      DATABASE_URL: await pg.createDatabase(),
      DATA_DIR: join(dir, 'data'),
      MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
      BACKUP_ALLOWED_ROOTS: join(dir, 'root'),
      BACKUP_BOOTSTRAP_API_KEY: 'key_kill9',
      BACKUP_BOOTSTRAP_SECRET: 'a-secret-of-enough-length',
      JOB_LEASE_MS: String(LEASE_MS),
    };
    const big = join(dir, 'root', 'big');
    mkdirSync(big, { recursive: true });
    for (let i = 0; i < 8; i++) writeFileSync(join(big, `f${i}`), randomBytes(16 * 1024 * 1024));

    // The instance that dies: a real server process, as `npm start` runs it.
    const doomed = spawn(process.execPath, [join(import.meta.dirname, 'main.ts')], { env: { ...process.env, ...env, PORT: '0', METRICS_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    doomed.stdout.on('data', (d: Buffer) => (out += d.toString()));
    doomed.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => doomed.on('exit', (_code, signal) => resolve(signal)));
    for (let i = 0; i < 300 && !/"port":\d+/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
    const base = `http://127.0.0.1:${/"port":(\d+)/.exec(out)![1]}/api/v1`;
    const auth = await fetch(`${base}/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: env.BACKUP_BOOTSTRAP_API_KEY, secret: env.BACKUP_BOOTSTRAP_SECRET }) });
    const token = ((await auth.json()) as { data: { access_token: string } }).data.access_token;
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
    const created = await fetch(`${base}/backup`, { method: 'POST', headers, body: JSON.stringify({ source: big, options: { deduplication: false, compression: 'none' } }) });
    const id = ((await created.json()) as { data: { id: string } }).data.id;
    let status = 'queued';
    for (let i = 0; i < 400 && status === 'queued'; i++) {
      await new Promise((r) => setTimeout(r, 25));
      status = ((await (await fetch(`${base}/backup/${id}`, { headers })).json()) as { data: { status: string } }).data.status;
    }
    expect(status).toBe('running');

    // The first dies without a word while its job runs; then a second instance on the same
    // database and storage comes up (started after the kill, so the job cannot finish meanwhile).
    doomed.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    survivor = await startHarness({ ...env, PORT: '0' }, {}, dir);
    const upAt = Date.now();
    expect(await survivor.service.services.queue.waitSettled(id, 4 * LEASE_MS)).toBe(true);
    expect(Date.now() - upAt).toBeLessThan(LEASE_MS);
    const t = await survivor.tokenFor({ apiKey: env.BACKUP_BOOTSTRAP_API_KEY, secret: env.BACKUP_BOOTSTRAP_SECRET, accountId: '', plan: 'free_trial' });
    const job = await survivor.request(`/api/v1/backup/${id}`, { token: t });
    expect(job.body.data).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
    expect(job.body.data.finished_at).not.toBeNull();

    // The repository is free again; the next backup of it works and restores byte-identical.
    writeFileSync(join(big, 'f0'), randomBytes(1024 * 1024));
    const next = await survivor.request('/api/v1/backup', { method: 'POST', token: t, headers: { Prefer: 'wait=30' }, json: { source: big, options: { deduplication: false, compression: 'none' } } });
    expect(next.body.data.status).toBe('completed');
    const restored = await survivor.request('/api/v1/restore', { method: 'POST', token: t, headers: { Prefer: 'wait=30' }, json: { backup_id: next.body.data.id, target_path: join(dir, 'root', 'restored') } });
    expect(restored.body.data.status).toBe('completed');
    for (let i = 0; i < 8; i++) expect(readFileSync(join(dir, 'root', 'restored', `f${i}`)).equals(readFileSync(join(big, `f${i}`)))).toBe(true);
  }, 180_000);
});

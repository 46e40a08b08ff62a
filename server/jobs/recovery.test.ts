import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../auth/api-keys.ts';
import { newId } from '../ids.ts';
import { openSqliteStore } from '../store/sqlite/index.ts';
import { startHarness } from '../testing/harness.ts';
import * as state from './state.ts';

describe('restart recovery and graceful shutdown', () => {
  let dir: string;
  beforeAll(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'recovery-')));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('marks a job left running as failed/INTERRUPTED at start and runs jobs left queued', async () => {
    const root = join(dir, 'root');
    mkdirSync(join(root, 'src'), { recursive: true });
    writeFileSync(join(root, 'src', 'a.txt'), 'a');
    // The state a killed server leaves behind: one job claimed (its lease far from over), one queued.
    const store = openSqliteStore(join(dir, 'data'));
    const account = await store.accounts.createAccount('pro');
    const running = newId('bkp');
    const queued = newId('bkp');
    for (const [id, repository] of [[running, 'r1'], [queued, 'r2']] as const) {
      await store.jobs.insertBackup({ id, accountId: account.id, repository, source: join(root, 'src'), destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true }, 100);
    }
    expect(await state.start(store, { kind: 'backup', id: running }, { owner: 'inst_killed', leaseMs: 600_000, accountCap: 2 })).toBe(true);
    await store.close();

    const h = await startHarness({}, {}, dir);
    try {
      expect(h.service.recovered).toEqual({ interrupted: [running], requeued: 1 });
      const token = await h.tokenFor(await createApiKey(h.service.services.store, { plan: 'pro', accountId: account.id }));
      const res = await h.request(`/api/v1/backup/${running}`, { token });
      expect(res.body.data).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
      expect(res.body.data.finished_at).not.toBeNull();
      await h.service.services.queue.waitSettled(queued, 30_000);
      expect((await h.request(`/api/v1/backup/${queued}`, { token })).body.data.status).toBe('completed');
    } finally {
      await h.stop();
    }
  });

  it('stops on SIGTERM: running job interrupted, process exits 0, the job is recorded failed/INTERRUPTED', async () => {
    const sdir = join(dir, 'sigterm');
    const root = join(sdir, 'root');
    mkdirSync(join(root, 'big'), { recursive: true });
    for (let i = 0; i < 6; i++) writeFileSync(join(root, 'big', `f${i}`), randomBytes(16 * 1024 * 1024));
    const env = {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      DATA_DIR: join(sdir, 'data'),
      XDG_CONFIG_HOME: join(sdir, 'config'),
      BACKUP_ALLOWED_ROOTS: root,
      BACKUP_BOOTSTRAP_API_KEY: 'key_sigterm_test',
      BACKUP_BOOTSTRAP_SECRET: 'a-secret-of-enough-length',
      LOG_LEVEL: 'info',
    };
    const child = spawn(process.execPath, [join(import.meta.dirname, '..', 'main.ts')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start: ${out}`)), 15_000);
      const check = (): void => {
        const m = /"port":(\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        } else setTimeout(check, 50);
      };
      check();
    });
    const base = `http://127.0.0.1:${port}/api/v1`;
    const tokenRes = await fetch(`${base}/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: 'key_sigterm_test', secret: 'a-secret-of-enough-length' }) });
    const token = ((await tokenRes.json()) as any).data.access_token as string;
    const created = await fetch(`${base}/backup`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ source: join(root, 'big'), options: { deduplication: false } }) });
    const id = ((await created.json()) as any).data.id as string;
    // Wait until the job is running, then stop the server.
    for (let i = 0; i < 200; i++) {
      const job = (await (await fetch(`${base}/backup/${id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as any;
      if (job.data.status !== 'queued') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toMatch(/"msg":"stopped"/);
    expect(out).not.toContain('a-secret-of-enough-length');

    const store = openSqliteStore(join(sdir, 'data'));
    try {
      // Stopped mid-run: recorded as interrupted, never left running.
      expect(await store.jobs.getBackup(id)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
    } finally {
      await store.close();
    }
  });

  it('answers a request held by Prefer: wait when the server stops, with the job interrupted', async () => {
    const h = await startHarness();
    try {
      const big = join(h.root, 'big');
      mkdirSync(big);
      for (let i = 0; i < 6; i++) writeFileSync(join(big, `f${i}`), randomBytes(16 * 1024 * 1024));
      const token = await h.tokenFor(await h.newKey());
      const held = h.request('/api/v1/backup', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { source: big, options: { deduplication: false } } });
      const store = h.service.services.store;
      for (let i = 0; i < 200 && (await store.jobs.counts()).running === 0; i++) await new Promise((r) => setTimeout(r, 10));
      const stopping = h.stop();
      const res = await held;
      await stopping;
      expect(res.status).toBe(202);
      expect(res.headers.get('preference-applied')).toBe('wait=30');
      expect(res.body.data).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
    } finally {
      await h.cleanup();
    }
  });
});

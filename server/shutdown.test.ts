import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from './store/index.ts';
import { alive, childrenOf, run, startServerProcess, type Started } from './testing/processes.ts';

const SHUTDOWN_TIMEOUT_MS = 2000;
const KEY = 'key_shutdown_test';
const SECRET = 'shutdown-test-secret-0123456789';

const dir = mkdtempSync(join(tmpdir(), 'shutdown-'));
const source = join(dir, 'root', 'big');
beforeAll(() => {
  // A sparse file of 64 GiB, so the backup is still running when the signal comes and when the
  // server notices npm is gone (it checks every second), however fast the machine: reading its
  // zeros alone takes far longer than that, and it takes no disk. (256 MiB of random bytes, used
  // before, were backed up within that second once large files were read beside the walk.)
  mkdirSync(source, { recursive: true });
  writeFileSync(join(source, 'sparse'), '');
  truncateSync(join(source, 'sparse'), 64 * 1024 ** 3);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** `npm start` as a user runs it, with a backup running; returns the npm process, the server's pid, the job id. */
async function npmStartWithRunningBackup(name: string): Promise<{ npm: Started; serverPid: number; jobId: string; dataDir: string }> {
  const dataDir = join(dir, name);
  const port = await freePort();
  const npm = run('npm', ['start', '--silent'], {
    DATA_DIR: dataDir,
    MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
    BACKUP_ALLOWED_ROOTS: join(dir, 'root'),
    PORT: String(port),
    METRICS_PORT: '0',
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    BACKUP_BOOTSTRAP_API_KEY: KEY,
    BACKUP_BOOTSTRAP_SECRET: SECRET,
  });
  await npm.listening();
  const [serverPid] = childrenOf(npm.child.pid!);
  expect(serverPid).toBeDefined();
  const base = `http://127.0.0.1:${port}/api/v1`;
  const json = { 'content-type': 'application/json' };
  const token = ((await (await fetch(`${base}/auth/token`, { method: 'POST', headers: json, body: JSON.stringify({ api_key: KEY, secret: SECRET }) })).json()) as any).data.access_token as string;
  const auth = { authorization: `Bearer ${token}` };
  const job = ((await (await fetch(`${base}/backup`, { method: 'POST', headers: { ...json, ...auth }, body: JSON.stringify({ source, options: { deduplication: false } }) })).json()) as any).data;
  for (let i = 0; i < 100; i++) {
    const status = ((await (await fetch(`${base}/backup/${job.id}`, { headers: auth })).json()) as any).data.status;
    if (status === 'running') break;
    expect(status).toBe('queued');
    await sleep(50);
  }
  return { npm, serverPid: serverPid!, jobId: job.id as string, dataDir };
}

/** Waits until none of `pids` is alive; returns how long that took. */
async function allGone(pids: number[], timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (pids.some(alive) && Date.now() - started < timeoutMs + 2000) await sleep(50);
  expect(pids.filter(alive)).toEqual([]);
  return Date.now() - started;
}

async function recordedJob(dataDir: string, id: string) {
  const store = await openStore({ dataDir, databaseUrl: null });
  try {
    return await store.jobs.getBackup(id);
  } finally {
    await store.close();
  }
}

describe('stopping `npm start`', () => {
  it('SIGTERM to the npm process ends every process of the server in time, the running job recorded INTERRUPTED', async () => {
    const { npm, serverPid, jobId, dataDir } = await npmStartWithRunningBackup('sigterm');
    process.kill(npm.child.pid!, 'SIGTERM');
    const ms = await allGone([npm.child.pid!, serverPid], SHUTDOWN_TIMEOUT_MS + 5000);
    expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 5000);
    expect(npm.output()).toContain('"reason":"SIGTERM"');
    expect(await recordedJob(dataDir, jobId)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
  }, 60_000);

  it('stops on SIGTERM even when nobody reads its output any more (the terminal or pipe is gone)', async () => {
    const server = startServerProcess({ DATA_DIR: join(dir, 'no-reader'), MASTER_KEY_FILE: join(dir, 'keys', 'master.key'), BACKUP_ALLOWED_ROOTS: join(dir, 'root'), PORT: '0', SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) });
    await server.listening();
    server.child.stdout!.destroy();
    server.child.stderr!.destroy();
    const started = Date.now();
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 5000);
  }, 30_000);

  it('stops the server when npm goes away without passing anything on (npm killed)', async () => {
    const { npm, serverPid, jobId, dataDir } = await npmStartWithRunningBackup('orphaned');
    process.kill(npm.child.pid!, 'SIGKILL');
    const ms = await allGone([npm.child.pid!, serverPid], SHUTDOWN_TIMEOUT_MS + 5000);
    expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 5000);
    expect(await recordedJob(dataDir, jobId)).toMatchObject({ status: 'failed', error: { code: 'INTERRUPTED' } });
  }, 60_000);
});

/**
 * The service as a benchmarked tool: each operation starts the real app (`node bench/http.ts
 * --serve`, built by createApp() as `npm start` builds it, rate limits raised) on a data
 * directory of its own, and times one job from its request to `completed` through the HTTP API.
 * Peak RSS and CPU time are the server process's (start-up included; from /proc, as GNU time
 * would give them), wall time is the job's alone. The master key is kept in the tool's home, so
 * a restore reads what a backup wrote.
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { freePort } from './tools.ts';
import type { Measure, Tool } from './tools.ts';
import { nodeFlags } from './tools.ts';

const KEY = 'key_bench_service';
/** The kernel's clock ticks per second (getconf CLK_TCK), the unit of /proc/<pid>/stat's times. */
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
const SECRET = 'bench-service-secret-0123456789';

type Call = (path: string, init?: RequestInit) => Promise<{ data: Record<string, unknown> }>;

/** A running server and an authenticated caller of its API. */
export interface RunningService {
  call: Call;
  auth: Record<string, string>;
  /** The server's peak RSS (MB) and CPU seconds (all its threads) so far. */
  usage(): Promise<{ rssMb: number; cpuSeconds: number }>;
  stop(): Promise<void>;
}

/** Starts the app on a free port with `dataDir`, allowing `roots`. */
export async function startService(root: string, opts: { dataDir: string; roots: string[]; masterKeyFile?: string }): Promise<RunningService> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [...nodeFlags(root), join(root, 'bench', 'http.ts'), '--serve'], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: opts.dataDir,
      BACKUP_ALLOWED_ROOTS: opts.roots.join(delimiter),
      BACKUP_BOOTSTRAP_API_KEY: KEY,
      BACKUP_BOOTSTRAP_SECRET: SECRET,
      BACKUP_BOOTSTRAP_PLAN: 'business',
      LOG_LEVEL: 'warn',
      METRICS_PORT: '0',
      ...(opts.masterKeyFile ? { MASTER_KEY_FILE: opts.masterKeyFile } : {}),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async (): Promise<void> => {
    child.kill('SIGTERM');
    await exited;
  };
  const usage = async (): Promise<{ rssMb: number; cpuSeconds: number }> => {
    const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
    const hwmKb = Number(/^VmHWM:\s+(\d+)/m.exec(status)![1]);
    // utime and stime, fields 14 and 15, counted after the command name's closing parenthesis.
    const stat = (await readFile(`/proc/${child.pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    return { rssMb: hwmKb / 1024, cpuSeconds: (Number(stat[11]) + Number(stat[12])) / CLOCK_TICKS };
  };
  const api = `http://127.0.0.1:${port}/api/v1`;
  try {
    for (let i = 0; ; i++) {
      if (await fetch(`${api}/status`).then(() => true, () => false)) break;
      if (i > 400) throw new Error('the service did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
    const call: Call = async (path, init = {}) => {
      const res = await fetch(`${api}${path}`, init);
      const body = (await res.json()) as { data: Record<string, unknown> };
      if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
      return body;
    };
    const json = { 'content-type': 'application/json' };
    const token = (await call('/auth/token', { method: 'POST', headers: json, body: JSON.stringify({ api_key: KEY, secret: SECRET }) })).data.access_token as string;
    return { call, auth: { authorization: `Bearer ${token}` }, usage, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Submits a job (`POST /backup` or `/restore`) and waits for it to complete; returns its id and the seconds from request to `completed`. */
export async function runJob(service: RunningService, kind: 'backup' | 'restore', body: Record<string, unknown>): Promise<{ id: string; seconds: number }> {
  const started = performance.now();
  const headers = { ...service.auth, 'content-type': 'application/json', prefer: 'wait=60' };
  const id = (await service.call(`/${kind}`, { method: 'POST', headers, body: JSON.stringify(body) })).data.id as string;
  for (;;) {
    const job = (await service.call(`/${kind}/${id}`, { headers: service.auth })).data;
    if (job.status === 'completed') break;
    if (job.status !== 'running' && job.status !== 'queued') throw new Error(`${kind} through the service: ${String(job.status)} ${JSON.stringify(job.error ?? null)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { id, seconds: (performance.now() - started) / 1000 };
}

/** The service as a Tool: the repository directory is the server's DATA_DIR (backups to its local destination). */
export function service(root: string): Tool {
  const timed = async (dataDir: string, home: string, roots: string[], job: (s: RunningService) => Promise<{ id: string; seconds: number }>): Promise<Measure & { snapshot: string }> => {
    execFileSync('sync'); // dirty pages of the previous step are not flushed on this one's time
    const s = await startService(root, { dataDir, roots, masterKeyFile: join(home, 'master.key') });
    try {
      const ran = await job(s);
      return { seconds: ran.seconds, ...(await s.usage()), stdout: '', snapshot: ran.id };
    } finally {
      await s.stop();
    }
  };
  return {
    name: 'service',
    async init(repo) {
      await mkdir(repo, { recursive: true });
    },
    backup: (repo, source, home) => timed(repo, home, [source], (s) => runJob(s, 'backup', { source, destination: 'local' })),
    restore: (repo, backupId, target, home) => timed(repo, home, [dirname(target)], (s) => runJob(s, 'restore', { backup_id: backupId, target_path: target, overwrite: 'always' })),
  };
}

import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BackupOperations } from '../../generated/backup-handlers.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { certificateCheck } from '../tls/server-certificate.ts';

type Op = BackupOperations['getStatus'];

/** A check gives up after this long and counts as failed. */
const CHECK_TIMEOUT_MS = 1000;

async function timed(check: () => unknown): Promise<{ status: 'ok' | 'failed'; latency_ms: number }> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS)));
  const ok = await Promise.race([Promise.resolve().then(check).then((r) => r !== false, () => false), timeout]);
  clearTimeout(timer);
  return { status: ok ? 'ok' : 'failed', latency_ms: Math.round(performance.now() - started) };
}

/** Writes, reads back and removes a probe file where the repositories live. */
async function storageProbe(dataDir: string): Promise<boolean> {
  const dir = join(dataDir, 'repositories');
  await mkdir(dir, { recursive: true });
  const file = join(dir, `.status-probe-${process.pid}`);
  const bytes = randomBytes(16);
  try {
    await writeFile(file, bytes);
    return (await readFile(file)).equals(bytes);
  } finally {
    await rm(file, { force: true });
  }
}

/** GET /status: database and repository storage checks and the job counts; no account data. */
export async function getStatus(_req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { store, config, startedAt, version, certificate } = ctx.services;
  const database = await timed(() => store.ping());
  const storage = await timed(() => storageProbe(config.dataDir));
  const checks = { database, storage, ...(certificate ? { certificate: certificateCheck(certificate) } : {}) };
  let jobs = { queued: 0, running: 0 };
  if (database.status === 'ok') {
    try {
      jobs = store.jobs.counts();
    } catch {
      database.status = 'failed';
    }
  }
  const now = Date.now();
  return {
    status: 200,
    headers: {},
    body: successBody(
      {
        status: Object.values(checks).every((c) => c.status === 'ok') ? 'ok' : 'degraded',
        version,
        uptime_seconds: Math.floor((now - startedAt) / 1000),
        time: new Date(now).toISOString(),
        checks,
        jobs,
      },
      ctx.requestId,
    ),
  };
}

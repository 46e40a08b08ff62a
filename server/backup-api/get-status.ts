import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { BackupOperations } from '../../generated/backup-handlers.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';

type Op = BackupOperations['getStatus'];

async function timed(check: () => unknown): Promise<{ status: 'ok' | 'failed'; latency_ms: number }> {
  const started = performance.now();
  let ok: boolean;
  try {
    ok = (await check()) !== false;
  } catch {
    ok = false;
  }
  return { status: ok ? 'ok' : 'failed', latency_ms: Math.round(performance.now() - started) };
}

/** GET /status: database and repository storage checks and the job counts; no account data. */
export async function getStatus(_req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { store, config, startedAt, version } = ctx.services;
  const database = await timed(() => store.ping());
  const storage = await timed(async () => {
    const dir = join(config.dataDir, 'repositories');
    await mkdir(dir, { recursive: true });
    await access(dir, constants.R_OK | constants.W_OK);
  });
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
        status: database.status === 'ok' && storage.status === 'ok' ? 'ok' : 'degraded',
        version,
        uptime_seconds: Math.floor((now - startedAt) / 1000),
        time: new Date(now).toISOString(),
        checks: { database, storage },
        jobs,
      },
      ctx.requestId,
    ),
  };
}

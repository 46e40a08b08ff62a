import type { BackupOperations } from '../../generated/backup-handlers.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';

type Op = BackupOperations['getStatus'];

/** GET /status: the shared named checks (server/health.ts), the job counts and the destinations' kinds; no account data. */
export async function getStatus(_req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { store, health, startedAt, version, destinations } = ctx.services;
  const { results: checks, degraded } = await health.run();
  let jobs = { queued: 0, running: 0 };
  if (checks.database.status === 'ok') {
    try {
      jobs = await store.jobs.counts();
    } catch {
      checks.database.status = 'failed';
    }
  }
  const now = Date.now();
  return {
    status: 200,
    headers: {},
    body: successBody(
      {
        status: degraded || checks.database.status !== 'ok' ? 'degraded' : 'ok',
        version,
        uptime_seconds: Math.floor((now - startedAt) / 1000),
        time: new Date(now).toISOString(),
        checks,
        jobs,
        destinations: destinations.list(),
      },
      ctx.requestId,
    ),
  };
}

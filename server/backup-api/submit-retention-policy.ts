import type { BackupOperations } from '../../generated/backup-handlers.ts';
import type { components } from '../../generated/backup-types.ts';
import { accountOf, type RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';
import { forgetBackups } from '../maintenance/forget.ts';
import { RULES, applyRetention, type RetentionPolicy } from '../maintenance/retention.ts';
import type { BackupJob } from '../store/index.ts';

type Op = BackupOperations['submitRetentionPolicy'];
type Schemas = components['schemas'];

/** The snapshot time of a backup: when it started. */
const startedAt = (b: BackupJob): Date => new Date(b.startedAt ?? b.createdAt);

/** POST /retention: applies the policy to each source and destination's completed backups. */
export async function submitRetentionPolicy(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { accountId } = accountOf(ctx);
  const body = req.body;
  if (body.destination !== undefined && !ctx.services.destinations.has(body.destination)) {
    throw new ApiError('DESTINATION_UNAVAILABLE', `No repository named ${body.destination} is configured.`, { destination: body.destination });
  }
  const policy: RetentionPolicy = {
    last: body.keep_last,
    hourly: body.keep_hourly,
    daily: body.keep_daily,
    weekly: body.keep_weekly,
    monthly: body.keep_monthly,
    yearly: body.keep_yearly,
  };
  if (RULES.every((r) => policy[r] === undefined)) {
    throw new ApiError('VALIDATION_ERROR', 'Request validation failed: 1 problem.', {
      errors: [{ path: '/body', message: `give at least one of ${RULES.map((r) => `keep_${r}`).join(', ')}` }],
    });
  }
  const dryRun = body.dry_run ?? false;
  const backups = await ctx.services.store.jobs.completedBackups(accountId, {
    ...(body.source !== undefined ? { source: body.source } : {}),
    ...(body.destination !== undefined ? { destination: body.destination } : {}),
  });
  const groups = new Map<string, BackupJob[]>();
  for (const b of backups) {
    const key = JSON.stringify([b.source, b.destination]);
    groups.set(key, [...(groups.get(key) ?? []), b]);
  }
  const out = { dry_run: dryRun, kept: 0, forgotten: 0, groups: [] as Schemas['RetentionResult']['groups'] };
  const doomed: BackupJob[] = [];
  for (const group of groups.values()) {
    const decision = applyRetention(group, startedAt, policy);
    out.kept += decision.keep.length;
    out.forgotten += decision.forget.length;
    doomed.push(...decision.forget);
    out.groups.push({
      source: group[0]!.source,
      destination: group[0]!.destination,
      keep: decision.keep.map((k) => ({ backup_id: k.item.id, started_at: startedAt(k.item).toISOString(), reasons: k.reasons })),
      forget: decision.forget.map((b) => ({ backup_id: b.id, started_at: startedAt(b).toISOString() })),
    });
  }
  if (!dryRun) await forgetBackups(ctx.services, accountId, doomed);
  return { status: 200, headers: {}, body: successBody(out, ctx.requestId) };
}

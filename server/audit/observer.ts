/**
 * Which service events the audit log records, and with which fields. Job lines carry the job id;
 * the request that created or cancelled a job is on its `.requested` / `.cancel_requested` line
 * (request id and client address), the worker's `.started` and `.finished` lines have no request.
 */
import type { Logger } from 'pino';
import { observer, type ServiceEvents } from '../events.ts';
import type { Job } from '../store/index.ts';
import type { AuditLog, AuditValue } from './log.ts';

type Fields = Record<string, AuditValue>;

function jobFields(job: Job): Fields & { account_id: string } {
  const common = { account_id: job.accountId, job_id: job.id };
  if (job.kind === 'backup') return { ...common, source: job.source, destination: job.destination };
  if (job.kind === 'maintenance') return { ...common, operation: job.operation, destination: job.destination, dry_run: job.dryRun, trigger: job.trigger };
  return { ...common, backup_id: job.backupId, target_path: job.targetPath, paths: job.paths?.length ?? null, overwrite: job.overwrite };
}

function outcome(job: Job): Fields {
  const duration = job.startedAt && job.finishedAt ? Math.round((Date.parse(job.finishedAt) - Date.parse(job.startedAt)) / 1000) : 0;
  const common = { status: job.status, error_code: job.error?.code ?? null, warnings: job.warnings.count, duration_seconds: duration };
  if (job.kind === 'maintenance') return common;
  if (job.kind === 'backup') return { ...common, size_bytes: job.sizeBytes, files_backed_up: job.filesBackedUp, stored_bytes: job.storedBytes };
  return { ...common, size_bytes: job.sizeBytes, files_restored: job.filesRestored, files_skipped: job.filesSkipped };
}

export function auditServiceEvents(events: ServiceEvents, audit: AuditLog, logger: Logger): void {
  const on = observer(events, logger);
  on('auth.token_issued', (e) =>
    audit.record('auth.token_issued', { account_id: e.accountId, request_id: e.requestId, client_ip: e.clientIp, key_id: e.keyId }),
  );
  on('auth.failed', (e) =>
    audit.record('auth.failed', { account_id: null, request_id: e.requestId, client_ip: e.clientIp, reason: e.reason, operation: e.operation }),
  );
  on('key.created', (e) => audit.record('key.created', { account_id: e.accountId, request_id: null, key_id: e.keyId, plan: e.plan, via: e.via }));
  on('key.revoked', (e) => audit.record('key.revoked', { account_id: e.accountId, request_id: null, key_id: e.keyId, via: e.via }));
  on('master_key.rotated', (e) => audit.record('master_key.rotated', { account_id: null, request_id: null, repository_keys: e.rewrapped, via: e.via }));
  on('job.requested', ({ job, requestId, clientIp }) => audit.record(`${job.kind}.requested`, { ...jobFields(job), request_id: requestId, client_ip: clientIp }));
  on('job.cancel_requested', ({ job, requestId, clientIp }) =>
    audit.record(`${job.kind}.cancel_requested`, { ...jobFields(job), request_id: requestId, client_ip: clientIp }),
  );
  on('job.started', ({ job }) => audit.record(`${job.kind}.started`, { ...jobFields(job), request_id: null }));
  on('job.finished', ({ job }) => audit.record(`${job.kind}.finished`, { ...jobFields(job), request_id: null, ...outcome(job) }));
}

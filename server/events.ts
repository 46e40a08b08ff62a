/**
 * What the service reports as it works, for the observers that are not part of the work: the
 * Prometheus metrics (server/metrics/) and the audit log (server/audit/) subscribe; the code that
 * does the work emits, one line at the place where the thing happened. Payloads carry ids and
 * outcomes, never a secret, a token or file content.
 *
 * Events are this instance's own: with several instances, each reports what it did (the request
 * it answered, the change of job status its compare-and-set won), so nothing is reported twice.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { JobRef, StatusObserver } from './jobs/state.ts';
import type { Job, Store } from './store/index.ts';

export interface RequestOrigin {
  requestId: string;
  clientIp: string;
}

export interface ServiceEventMap {
  /** POST /auth/token answered a token. */
  'auth.token_issued': [RequestOrigin & { accountId: string; keyId: string }];
  /** A request was refused 401: no, bad or expired token, or wrong key and secret. */
  'auth.failed': [RequestOrigin & { reason: string; operation: string }];
  /** A request was refused 429 by a rate limit (the limit's name: account, auth-token, tools-…). */
  'ratelimit.rejected': [{ limit: string }];
  /** An API key was made: by the keys command, the bootstrap settings or the first start. */
  'key.created': [{ accountId: string; keyId: string; plan: string; via: 'cli' | 'bootstrap' | 'development' }];
  'key.revoked': [{ accountId: string; keyId: string; via: 'cli' }];
  /** The keys command rewrapped every repository key under a new master key. */
  'master_key.rotated': [{ rewrapped: number; via: 'cli' }];
  /** A request created a job (it is queued). */
  'job.requested': [RequestOrigin & { job: Job }];
  /** A request asked to cancel a job. */
  'job.cancel_requested': [RequestOrigin & { job: Job }];
  /** queued → running, by this instance (the job as it stands then). */
  'job.started': [{ job: Job }];
  /** → completed | failed | cancelled, recorded by this instance (it ran the job, cancelled it queued, or found it interrupted). */
  'job.finished': [{ job: Job }];
}

export type ServiceEvents = EventEmitter<ServiceEventMap>;

export function createServiceEvents(): ServiceEvents {
  const events = new EventEmitter<ServiceEventMap>();
  events.setMaxListeners(0);
  return events;
}

/**
 * The job state machine's observer (server/jobs/state.ts): reads the job after each change of
 * status this instance made and reports it as job.started or job.finished. A failure to read is
 * logged; it never fails the change.
 */
export function jobStatusObserver(events: ServiceEvents, store: Store, logger: Logger): StatusObserver {
  return async (ref: JobRef, to) => {
    try {
      const job = ref.kind === 'backup' ? await store.jobs.getBackup(ref.id) : await store.jobs.getRestore(ref.id);
      if (job) events.emit(to === 'running' ? 'job.started' : 'job.finished', { job });
    } catch (err) {
      logger.warn({ err, job_id: ref.id, status: to }, 'a change of job status could not be reported to metrics and the audit log');
    }
  };
}

/**
 * Subscribes an observer: `on(name, handler)` for each event it wants. Observers must never break
 * the work that emitted the event: a handler that throws is logged and the work goes on.
 */
export function observer(events: ServiceEvents, logger: Logger) {
  return <K extends keyof ServiceEventMap>(name: K, handler: (...args: ServiceEventMap[K]) => void): void => {
    const guarded = (...args: ServiceEventMap[K]): void => {
      try {
        handler(...args);
      } catch (err) {
        logger.error({ err, event: name }, 'an observer of service events failed');
      }
    };
    events.on(name, guarded as never);
  };
}

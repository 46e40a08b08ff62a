import { parseInt10 } from '../config-values.ts';

export interface JobSettings {
  /** JOB_LEASE_MS, default 30 s: a job whose instance is unheard from this long is recorded INTERRUPTED by another. */
  leaseMs: number;
  /** JOB_QUEUE_LIMIT, default 100: jobs one account may have queued; more are refused 429 QUEUE_FULL. */
  queueLimit: number;
  /** JOB_ACCOUNT_CONCURRENCY, default 2: jobs one account may have running at once, on every instance together. */
  accountConcurrency: number;
}

export function loadJobSettings(env: NodeJS.ProcessEnv): JobSettings {
  return {
    leaseMs: parseInt10('JOB_LEASE_MS', env.JOB_LEASE_MS, 30_000, 1000, 3_600_000),
    queueLimit: parseInt10('JOB_QUEUE_LIMIT', env.JOB_QUEUE_LIMIT, 100, 1, 1_000_000),
    accountConcurrency: parseInt10('JOB_ACCOUNT_CONCURRENCY', env.JOB_ACCOUNT_CONCURRENCY, 2, 1, 64),
  };
}

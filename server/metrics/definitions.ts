/**
 * Every metric the service exports (docs/operations.md lists them with their meaning). Names
 * follow the Prometheus conventions (base units, `_total` counters, `_seconds`, `_bytes`). Label
 * values come from closed sets only — operation ids, status classes, limit names, job kinds,
 * statuses, error codes, configured destinations — never an account, key, path or address.
 *
 * Two scopes: `backup_cluster_*` gauges describe state every instance shares through the
 * database (the same value on each instance: aggregate them with max(), never sum()); every
 * other metric describes this instance alone (sum() across instances gives the cluster).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export function defineMetrics(registry: Registry) {
  const registers = [registry];
  return {
    // HTTP (this instance)
    httpRequests: new Counter({
      name: 'backup_http_requests_total',
      help: 'HTTP requests answered, by operationId ("unmatched" for unknown paths) and status class.',
      labelNames: ['operation', 'status_class'] as const,
      registers,
    }),
    httpDuration: new Histogram({
      name: 'backup_http_request_duration_seconds',
      help: 'Time from the request to the end of its answer, by operationId and status class.',
      labelNames: ['operation', 'status_class'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    rateLimitRejections: new Counter({
      name: 'backup_rate_limit_rejections_total',
      help: 'Requests refused 429 RATE_LIMITED, by the limit that refused them.',
      labelNames: ['limit'] as const,
      registers,
    }),
    authFailures: new Counter({
      name: 'backup_auth_failures_total',
      help: 'Requests refused 401, by error code (UNAUTHORIZED, TOKEN_EXPIRED, INVALID_CREDENTIALS).',
      labelNames: ['reason'] as const,
      registers,
    }),
    tokensIssued: new Counter({
      name: 'backup_tokens_issued_total',
      help: 'Access tokens issued by POST /api/v1/auth/token.',
      registers,
    }),

    // Jobs (this instance: the one that took the request, or ran the job)
    jobsCreated: new Counter({
      name: 'backup_jobs_created_total',
      help: 'Jobs created by requests to this instance, by kind.',
      labelNames: ['kind'] as const,
      registers,
    }),
    jobsFinished: new Counter({
      name: 'backup_jobs_finished_total',
      help: 'Jobs that reached a final status on this instance, by kind, status and error code ("" unless failed).',
      labelNames: ['kind', 'status', 'error_code'] as const,
      registers,
    }),
    jobDuration: new Histogram({
      name: 'backup_job_duration_seconds',
      help: 'Run time of finished jobs (from running to the final status), by kind.',
      labelNames: ['kind'] as const,
      buckets: [1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 14400, 43200],
      registers,
    }),
    jobQueueWait: new Histogram({
      name: 'backup_job_queue_wait_seconds',
      help: 'Time jobs waited queued before they started running, by kind.',
      labelNames: ['kind'] as const,
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400],
      registers,
    }),
    jobReadBytes: new Counter({
      name: 'backup_job_read_bytes_total',
      help: 'File content read by completed jobs: from the source for backups, from the backup for restores.',
      labelNames: ['kind'] as const,
      registers,
    }),
    jobStoredBytes: new Counter({
      name: 'backup_job_stored_bytes_total',
      help: 'Bytes completed jobs wrote to repositories, after deduplication, compression and encryption.',
      labelNames: ['kind'] as const,
      registers,
    }),
    instanceJobsRunning: new Gauge({
      name: 'backup_instance_jobs_running',
      help: 'Jobs running on this instance now.',
      registers,
    }),

    // Shared state (the same on every instance sharing the database)
    clusterJobs: new Gauge({
      name: 'backup_cluster_jobs',
      help: 'Jobs of all instances by state (queued, running). Cluster-wide: aggregate with max(), not sum().',
      labelNames: ['state'] as const,
      registers,
    }),
    clusterOldestQueuedAge: new Gauge({
      name: 'backup_cluster_oldest_queued_job_age_seconds',
      help: 'Age of the oldest queued job, 0 when none waits. Cluster-wide: aggregate with max().',
      registers,
    }),
    clusterLastBackup: new Gauge({
      name: 'backup_cluster_last_successful_backup_timestamp_seconds',
      help: 'When the newest completed backup finished, by destination (Unix time). Cluster-wide: aggregate with max().',
      labelNames: ['destination'] as const,
      registers,
    }),
    clusterRepositoryBytes: new Gauge({
      name: 'backup_cluster_repository_stored_bytes',
      help: 'Bytes completed backups wrote to the repositories of a destination. Cluster-wide: aggregate with max().',
      labelNames: ['destination'] as const,
      registers,
    }),

    // Storage and certificate, as this instance sees them
    storageFree: new Gauge({
      name: 'backup_storage_free_bytes',
      help: 'Free bytes (available to the server) on the filesystem holding the local repositories.',
      registers,
    }),
    storageFreeThreshold: new Gauge({
      name: 'backup_storage_free_threshold_bytes',
      help: 'Free space below which /api/v1/status reports degraded.',
      registers,
    }),
    certificateExpiry: new Gauge({
      name: 'backup_tls_certificate_expiry_timestamp_seconds',
      help: 'When the served TLS certificate expires (Unix time); absent without built-in TLS.',
      registers,
    }),
  };
}

export type MetricSet = ReturnType<typeof defineMetrics>;

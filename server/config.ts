import { homedir } from 'node:os';
import { delimiter, isAbsolute, resolve } from 'node:path';
import { parseCorsOrigins, type CorsOrigins } from './cors-origins.ts';
import { ConfigError, parseBool, parseInt10 } from './config-values.ts';
import { loadAuditSettings, type AuditSettings } from './audit/settings.ts';
import { loadDestinations, type DestinationSettings } from './destinations/settings.ts';
import { parseTrustProxy, type TrustProxySetting } from './http/client-address.ts';
import { loadJobSettings, type JobSettings } from './jobs/settings.ts';
import { loadKeySettings, type KeySettings } from './keys/settings.ts';
import { parseRedisUrl } from './ratelimit/select.ts';
import { tlsFilesFromEnv, type TlsFiles } from './tls/certificate.ts';
import { assertPlainHttpOnLoopback } from './tls/loopback.ts';
import { loadMetricsSettings, type MetricsSettings } from './metrics/settings.ts';
import { loadFreeSpaceThreshold, type FreeSpaceThreshold } from './storage-space.ts';
import { loadDatabaseUrl } from './store/settings.ts';
import { loadMaintenanceSettings, type MaintenanceSettings } from './maintenance/settings.ts';

export { ConfigError };

export type Plan = 'free_trial' | 'pro' | 'business';
export const PLANS: readonly Plan[] = ['free_trial', 'pro', 'business'];

/** Everything the server reads from its environment, parsed once at start. */
export interface Config {
  /** PORT, default 8080. 0 picks an ephemeral port (tests). */
  port: number;
  /** HOST, default 127.0.0.1. Off loopback only with TLS or a trusted TLS-terminating proxy. */
  host: string;
  /** DATA_DIR, default ./data, resolved against the working directory. */
  dataDir: string;
  /** BACKUP_ALLOWED_ROOTS (path-delimiter list); default: the user's home directory. */
  allowedRoots: string[];
  bootstrap: { apiKey: string; secret: string; plan: Plan } | null;
  /** TRUST_PROXY: Express "trust proxy" value; false (socket address only) by default. */
  trustProxy: TrustProxySetting;
  /** JOB_CONCURRENCY, default 2 (the machine class has two cores). */
  jobConcurrency: number;
  /** VALIDATE_RESPONSES, default true. */
  validateResponses: boolean;
  /** RATE_LIMITS=off disables every limiter (benchmarks only); default on. */
  rateLimitsEnabled: boolean;
  /** CHECK_SITE_ALLOW_PRIVATE=true lets check-site dial private/loopback targets (tests only). */
  checkSiteAllowPrivate: boolean;
  /** LOG_LEVEL, default info. */
  logLevel: string;
  /** WARM_UP_REQUESTS, default 1000: requests sent to a copy of the app's routes on throwaway state before it listens (server/warm-up); 0 = none. */
  warmUpRequests: number;
  /** SHUTDOWN_TIMEOUT_MS: how long in-flight requests may take after SIGTERM, default 10000. */
  shutdownTimeoutMs: number;
  /** REDIS_URL: rate-limit counters in Redis (shared by instances); unset = in this process. */
  redisUrl: string | undefined;
  /** TLS_CERT_FILE + TLS_KEY_FILE: serve HTTPS with this pair (checked to load at start); null = plain HTTP. */
  tls: TlsFiles | null;
  /** CORS_ORIGINS: origins whose browser pages may call the APIs ("*" for any); none by default. */
  corsOrigins: CorsOrigins;
  /** DATABASE_URL: PostgreSQL (several instances); unset, SQLite in DATA_DIR (docs/deploy.md). */
  databaseUrl: string | null;
  /** JOB_LEASE_MS, JOB_QUEUE_LIMIT, JOB_ACCOUNT_CONCURRENCY. */
  jobs: JobSettings;
  /** MASTER_KEY(_FILE), TOKEN_SIGNING_KEY(_FILE), and 1.0.0's BACKUP_REPOSITORY_PASSWORD (migration only). */
  keys: KeySettings;
  /** STORAGE_MIN_FREE_BYTES, STORAGE_MIN_FREE_PERCENT: below either, /status reports the storage degraded. */
  storageFree: FreeSpaceThreshold;
  maintenance: MaintenanceSettings;
  /** SHUTDOWN_DRAIN_MS, default 0: after SIGTERM, /readyz answers 503 while the API still serves this long, so load balancers stop routing first. */
  shutdownDrainMs: number;
  /** METRICS_PORT, METRICS_HOST: the Prometheus listener (server/metrics/settings.ts). */
  metrics: MetricsSettings;
  /** AUDIT_LOG, AUDIT_LOG_MAX_BYTES, AUDIT_LOG_KEEP (server/audit/settings.ts). */
  audit: AuditSettings;
  /** `local`, `cloud` (in a bucket with CLOUD_S3_BUCKET) and those of DESTINATIONS_FILE. */
  destinations: DestinationSettings[];
}

function parseTrustProxySetting(raw: string | undefined): TrustProxySetting {
  try {
    return parseTrustProxy(raw);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

/** Runs a setting's own parser (which names its variable), turning its error into a ConfigError. */
function setting<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

function parsePlan(name: string, raw: string | undefined): Plan {
  const v = (raw ?? '').trim() || 'free_trial';
  if (!(PLANS as readonly string[]).includes(v)) {
    throw new ConfigError(`${name} must be one of ${PLANS.join(', ')}, got "${v}"`);
  }
  return v as Plan;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const rootsRaw = env.BACKUP_ALLOWED_ROOTS;
  const allowedRoots =
    rootsRaw === undefined
      ? [homedir()]
      : rootsRaw
          .split(delimiter)
          .map((r) => r.trim())
          .filter((r) => r !== '');
  for (const root of allowedRoots) {
    if (!isAbsolute(root)) throw new ConfigError(`BACKUP_ALLOWED_ROOTS entries must be absolute paths, got "${root}"`);
  }

  const apiKey = env.BACKUP_BOOTSTRAP_API_KEY?.trim();
  const secret = env.BACKUP_BOOTSTRAP_SECRET;
  if (Boolean(apiKey) !== Boolean(secret)) {
    throw new ConfigError('BACKUP_BOOTSTRAP_API_KEY and BACKUP_BOOTSTRAP_SECRET must be set together');
  }
  if (apiKey && !/^key_[A-Za-z0-9_-]{1,124}$/.test(apiKey)) {
    throw new ConfigError('BACKUP_BOOTSTRAP_API_KEY must look like key_<1-124 of A-Za-z0-9_->, as api_key does in the API');
  }
  if (secret !== undefined && secret.length > 0 && secret.length < 16) {
    throw new ConfigError('BACKUP_BOOTSTRAP_SECRET must be at least 16 characters');
  }

  const dataDir = resolve(cwd, env.DATA_DIR?.trim() || './data');
  const config: Config = {
    port: parseInt10('PORT', env.PORT, 8080, 0, 65535),
    host: env.HOST?.trim() || '127.0.0.1',
    dataDir,
    allowedRoots: allowedRoots.map((r) => resolve(r)),
    bootstrap:
      apiKey && secret ? { apiKey, secret, plan: parsePlan('BACKUP_BOOTSTRAP_PLAN', env.BACKUP_BOOTSTRAP_PLAN) } : null,
    trustProxy: parseTrustProxySetting(env.TRUST_PROXY),
    jobConcurrency: parseInt10('JOB_CONCURRENCY', env.JOB_CONCURRENCY, 2, 1, 64),
    validateResponses: parseBool('VALIDATE_RESPONSES', env.VALIDATE_RESPONSES, true),
    rateLimitsEnabled: parseBool('RATE_LIMITS', env.RATE_LIMITS, true),
    checkSiteAllowPrivate: parseBool('CHECK_SITE_ALLOW_PRIVATE', env.CHECK_SITE_ALLOW_PRIVATE, false),
    logLevel: env.LOG_LEVEL?.trim() || 'info',
    warmUpRequests: parseInt10('WARM_UP_REQUESTS', env.WARM_UP_REQUESTS, 1000, 0, 10_000),
    shutdownTimeoutMs: parseInt10('SHUTDOWN_TIMEOUT_MS', env.SHUTDOWN_TIMEOUT_MS, 10_000, 0, 600_000),
    redisUrl: setting(() => parseRedisUrl(env.REDIS_URL)),
    tls: setting(() => tlsFilesFromEnv(env, cwd)),
    corsOrigins: setting(() => parseCorsOrigins(env.CORS_ORIGINS)),
    databaseUrl: loadDatabaseUrl(env),
    jobs: loadJobSettings(env),
    keys: loadKeySettings(env, dataDir, cwd),
    storageFree: loadFreeSpaceThreshold(env),
    maintenance: loadMaintenanceSettings(env, loadDatabaseUrl(env) !== null),
    shutdownDrainMs: parseInt10('SHUTDOWN_DRAIN_MS', env.SHUTDOWN_DRAIN_MS, 0, 0, 600_000),
    metrics: loadMetricsSettings(env),
    audit: loadAuditSettings(env, cwd),
    destinations: setting(() => loadDestinations(env, dataDir)),
  };
  setting(() => assertPlainHttpOnLoopback(config));
  return config;
}

import { homedir } from 'node:os';
import { delimiter, isAbsolute, resolve } from 'node:path';
import { parseCorsOrigins, type CorsOrigins } from './cors-origins.ts';
import { parseTrustProxy, type TrustProxySetting } from './http/client-address.ts';
import { parseRedisUrl } from './ratelimit/select.ts';
import { tlsFilesFromEnv, type TlsFiles } from './tls/certificate.ts';
import { assertPlainHttpOnLoopback } from './tls/loopback.ts';

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
  /** BACKUP_REPOSITORY_PASSWORD; when unset a random one is kept in DATA_DIR/secrets. */
  repositoryPassword: string | undefined;
  /** LOG_LEVEL, default info. */
  logLevel: string;
  /** SHUTDOWN_TIMEOUT_MS: how long in-flight requests may take after SIGTERM, default 10000. */
  shutdownTimeoutMs: number;
  /** REDIS_URL: rate-limit counters in Redis (shared by instances); unset = in this process. */
  redisUrl: string | undefined;
  /** TLS_CERT_FILE + TLS_KEY_FILE: serve HTTPS with this pair (checked to load at start); null = plain HTTP. */
  tls: TlsFiles | null;
  /** CORS_ORIGINS: origins whose browser pages may call the APIs ("*" for any); none by default. */
  corsOrigins: CorsOrigins;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

function parseBool(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === '') return fallback;
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function parseInt10(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return n;
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

  const config: Config = {
    port: parseInt10('PORT', env.PORT, 8080, 0, 65535),
    host: env.HOST?.trim() || '127.0.0.1',
    dataDir: resolve(cwd, env.DATA_DIR?.trim() || './data'),
    allowedRoots: allowedRoots.map((r) => resolve(r)),
    bootstrap:
      apiKey && secret ? { apiKey, secret, plan: parsePlan('BACKUP_BOOTSTRAP_PLAN', env.BACKUP_BOOTSTRAP_PLAN) } : null,
    trustProxy: parseTrustProxySetting(env.TRUST_PROXY),
    jobConcurrency: parseInt10('JOB_CONCURRENCY', env.JOB_CONCURRENCY, 2, 1, 64),
    validateResponses: parseBool('VALIDATE_RESPONSES', env.VALIDATE_RESPONSES, true),
    rateLimitsEnabled: parseBool('RATE_LIMITS', env.RATE_LIMITS, true),
    checkSiteAllowPrivate: parseBool('CHECK_SITE_ALLOW_PRIVATE', env.CHECK_SITE_ALLOW_PRIVATE, false),
    repositoryPassword: env.BACKUP_REPOSITORY_PASSWORD || undefined,
    logLevel: env.LOG_LEVEL?.trim() || 'info',
    shutdownTimeoutMs: parseInt10('SHUTDOWN_TIMEOUT_MS', env.SHUTDOWN_TIMEOUT_MS, 10_000, 0, 600_000),
    redisUrl: setting(() => parseRedisUrl(env.REDIS_URL)),
    tls: setting(() => tlsFilesFromEnv(env, cwd)),
    corsOrigins: setting(() => parseCorsOrigins(env.CORS_ORIGINS)),
  };
  setting(() => assertPlainHttpOnLoopback(config));
  return config;
}

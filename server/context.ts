import type { Logger } from 'pino';
import type { TokenService } from './auth/tokens.ts';
import type { Config } from './config.ts';
import type { ServiceEvents } from './events.ts';
import type { Health } from './health.ts';
import type { Destinations } from './destinations/registry.ts';
import { ApiError } from './http/errors.ts';
import type { AuthContext } from './http/locals.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { RepositoryOpener } from './jobs/repositories.ts';
import type { Store } from './store/index.ts';
import type { ServerCertificate } from './tls/server-certificate.ts';
import type { CheckSiteOptions } from './tools-api/net/check-site.ts';
import type { IpInfoOptions } from './tools-api/net/ip-info.ts';

/** The long-lived parts every handler may use. */
export interface Services {
  config: Config;
  store: Store;
  tokens: TokenService;
  queue: JobQueue;
  logger: Logger;
  /** What the service reports as it works (metrics and the audit log listen). */
  events: ServiceEvents;
  /** The named dependency checks /status and /readyz share, and the draining flag. */
  health: Health;
  /** Epoch ms when the process started serving. */
  startedAt: number;
  version: string;
  /** The check-site policy (public targets only unless CHECK_SITE_ALLOW_PRIVATE) and resolver. */
  siteCheck: CheckSiteOptions;
  /** ip-info's name lookup (tests inject one); reverse DNS is asked for public addresses only. */
  ipInfo: IpInfoOptions;
  /** The served TLS certificate (rotated in place), when TLS_CERT_FILE/TLS_KEY_FILE are set. */
  certificate: ServerCertificate | undefined;
  /** Opens an account's repositories (deleting backups, usage). */
  repositories: RepositoryOpener;
  /** The configured destinations: name → kind and, for the job runner, each account's Backend. */
  destinations: Destinations;
}

/** What a handler knows about the request beyond its validated input. */
export interface RequestContext {
  requestId: string;
  /** Set on operations that need a bearer token (the auth middleware ran before the handler). */
  auth: AuthContext | undefined;
  /** The client address (socket, or X-Forwarded-For through trusted proxies only). */
  clientIp: string;
  userAgent: string | null;
  services: Services;
}

export function accountOf(ctx: RequestContext): AuthContext {
  if (!ctx.auth) throw new ApiError('UNAUTHORIZED', 'A bearer token is required.');
  return ctx.auth;
}

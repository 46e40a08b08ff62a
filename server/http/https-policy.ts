/**
 * Only HTTPS is served. A request is answered when it arrived over TLS, or through a trusted
 * proxy (TRUST_PROXY) whose X-Forwarded-Proto says `https`, or straight from a loopback address
 * without a proxy saying `http` (local development and tools on the host). Anything else, a
 * trusted proxy reporting `http` included, is refused with 403 HTTPS_REQUIRED before any
 * operation runs. Responses that went out over HTTPS carry Strict-Transport-Security.
 *
 * The health probes are exempt: load balancers and kubelets call each instance directly, not
 * through the TLS-terminating proxy, and a probe carries no credentials and answers no data.
 */
import type { Request, RequestHandler } from 'express';
import { isLoopback } from '../tls/loopback.ts';
import { peerIsTrustedProxy } from './client-address.ts';
import { ApiError } from './errors.ts';

/** Two years, as the HSTS preload list asks; no includeSubDomains (the host's siblings are not ours). */
export const HSTS = 'max-age=63072000';

type Transport = 'https' | 'http-forwarded' | 'http-loopback' | 'http';

/** What a connection's peer and socket say, the same for each of its requests. */
interface Connection {
  trusted: boolean;
  direct: Transport;
}
const connections = new WeakMap<object, Connection>();

/** How the client reached the server, judged only from what can be trusted. */
export function transportOf(req: Request): Transport {
  let connection = connections.get(req.socket);
  if (!connection) {
    const direct = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : isLoopback(req.socket.remoteAddress ?? '') ? 'http-loopback' : 'http';
    connection = { trusted: peerIsTrustedProxy(req), direct };
    connections.set(req.socket, connection);
  }
  const forwarded = connection.trusted ? req.get('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase() : undefined;
  if (forwarded === 'https') return 'https';
  if (forwarded === 'http') return 'http-forwarded';
  return connection.direct;
}

export function httpsPolicy(exemptPaths: ReadonlySet<string> = new Set()): RequestHandler {
  return (req, res, next) => {
    const transport = transportOf(req);
    if (transport === 'https') res.setHeader('Strict-Transport-Security', HSTS);
    if ((transport === 'http' || transport === 'http-forwarded') && !exemptPaths.has(req.path)) {
      next(new ApiError('HTTPS_REQUIRED', 'Only HTTPS is served; call the https:// address. Nothing was done.'));
      return;
    }
    next();
  };
}

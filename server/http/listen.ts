/**
 * The listening socket of both APIs: plain HTTP, or HTTPS when a certificate is configured, with
 * the connection timeouts that keep slow or idle clients from holding sockets:
 *
 * - headersTimeout: the request head must arrive within 15 s of the connection (or of the
 *   previous response on a kept-alive connection); a client that trickles headers is cut.
 * - requestTimeout: the whole request, head and body, within 30 s (bodies are ≤ 64 KiB).
 *   Answers may take longer (`Prefer: wait`); the timeout only covers receiving the request.
 * - keepAliveTimeout: an idle kept-alive connection is closed after 5 s without a request.
 * - handshakeTimeout (TLS): the handshake must finish within 10 s.
 * - connections are checked for these every second (Node's default is every 30 s, which would
 *   let a slow client hold a socket for up to 45 s).
 */
import { once } from 'node:events';
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { ServerCertificate } from '../tls/server-certificate.ts';

export const HTTP_TIMEOUTS = {
  headersTimeoutMs: 15_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  handshakeTimeoutMs: 10_000,
  checkIntervalMs: 1_000,
} as const;

const SERVER_OPTIONS = {
  headersTimeout: HTTP_TIMEOUTS.headersTimeoutMs,
  requestTimeout: HTTP_TIMEOUTS.requestTimeoutMs,
  connectionsCheckingInterval: HTTP_TIMEOUTS.checkIntervalMs,
};

/** Creates the server (HTTPS with `certificate`, which it then follows through rotations) and listens. */
export async function listen(app: RequestListener, options: { port: number; host: string; certificate?: ServerCertificate | undefined }): Promise<Server> {
  const { certificate } = options;
  let server: Server;
  if (certificate) {
    const https = createHttpsServer({ ...SERVER_OPTIONS, ...certificate.secureOptions(), handshakeTimeout: HTTP_TIMEOUTS.handshakeTimeoutMs }, app);
    certificate.watch(https);
    server = https;
  } else {
    server = createHttpServer(SERVER_OPTIONS, app);
  }
  server.keepAliveTimeout = HTTP_TIMEOUTS.keepAliveTimeoutMs;
  server.listen(options.port, options.host);
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([err]) => Promise.reject(err as Error))]);
  return server;
}

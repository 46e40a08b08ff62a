/**
 * A tiny reverse proxy that makes a conforming server non-conforming in one chosen way, so the
 * suite can prove each check notices (no product code knows about it).
 */
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';

export type Tamper =
  /** meta.request_id becomes a number in every JSON envelope: a body-schema violation. */
  | 'meta-type'
  /** 202 answers become 200: a status code the document does not declare for the operation. */
  | 'status-code'
  /** X-Request-Id is dropped from every answer: a missing required header. */
  | 'drop-header';

export interface TamperProxy {
  origin: string;
  /** How many responses were altered. */
  altered(): number;
  stop(): Promise<void>;
}

function rewrite(tamper: Tamper, status: number, headers: IncomingHttpHeaders, body: Buffer): { status: number; headers: IncomingHttpHeaders; body: Buffer; changed: boolean } {
  const out = { ...headers };
  delete out['content-length'];
  delete out['transfer-encoding'];
  if (tamper === 'drop-header') {
    const changed = 'x-request-id' in out;
    delete out['x-request-id'];
    return { status, headers: out, body, changed };
  }
  if (tamper === 'status-code') return { status: status === 202 ? 200 : status, headers: out, body, changed: status === 202 };
  if (!(headers['content-type'] ?? '').includes('json')) return { status, headers: out, body, changed: false };
  try {
    const json = JSON.parse(body.toString('utf8')) as { meta?: { request_id?: unknown } };
    if (!json.meta) return { status, headers: out, body, changed: false };
    json.meta.request_id = 42;
    return { status, headers: out, body: Buffer.from(JSON.stringify(json)), changed: true };
  } catch {
    return { status, headers: out, body, changed: false };
  }
}

export async function startTamperProxy(upstreamOrigin: string, tamper: Tamper): Promise<TamperProxy> {
  const upstream = new URL(upstreamOrigin);
  let altered = 0;
  const server: Server = createServer((req, res) => {
    const up = request(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (upRes) => {
        const chunks: Buffer[] = [];
        upRes.on('data', (c: Buffer) => chunks.push(c));
        upRes.on('end', () => {
          const out = rewrite(tamper, upRes.statusCode ?? 502, upRes.headers, Buffer.concat(chunks));
          if (out.changed) altered++;
          res.writeHead(out.status, { ...out.headers, 'content-length': String(out.body.length) });
          res.end(out.body);
        });
      },
    );
    up.on('error', (err) => {
      res.writeHead(502).end(String(err));
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    origin: `http://127.0.0.1:${address.port}`,
    altered: () => altered,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

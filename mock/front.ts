/**
 * The mock's HTTP listener for one API: hands each request to the shared mock service (the
 * state layer with Prism behind it) and writes its answer, and answers what a browser needs
 * around it: CORS for any origin (preflights included), and `POST /__mock/reset`, which forgets
 * all state.
 */
import { isUtf8 } from 'node:buffer';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BODY_LIMIT_BYTES, type MockService } from '../sdk/src/mock/service.ts';
import type { ApiName } from '../sdk/src/mock/routes.ts';

export interface Front {
  origin: string;
  close(): Promise<void>;
}

/** The path of the reset call, outside every API path. */
export const RESET_PATH = '/__mock/reset';

const header = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value.join(', ') : value);

/** Reads the body, keeping at most one byte over the limit (the rest is drained). */
function readBody(req: IncomingMessage): Promise<{ text: string | undefined; bytes: number; utf8: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      if (bytes <= BODY_LIMIT_BYTES) chunks.push(chunk);
      bytes += chunk.length;
    });
    req.on('end', () => {
      const data = Buffer.concat(chunks);
      resolve({ text: bytes === 0 ? undefined : data.toString('utf8'), bytes, utf8: isUtf8(data) });
    });
    req.on('error', reject);
  });
}

function corsHeaders(req: IncomingMessage): Record<string, string> {
  return {
    'access-control-allow-origin': header(req.headers.origin) ?? '*',
    'access-control-expose-headers': '*',
    vary: 'Origin',
  };
}

async function respond(api: ApiName, service: MockService, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://mock.invalid');
  if (req.method === 'OPTIONS' && req.headers.origin && req.headers['access-control-request-method']) {
    res.writeHead(204, {
      ...corsHeaders(req),
      'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE',
      'access-control-allow-headers': header(req.headers['access-control-request-headers']) ?? '*',
      'access-control-max-age': '600',
    });
    res.end();
    return;
  }
  const { text, bytes, utf8 } = await readBody(req);
  if (req.method === 'POST' && url.pathname === RESET_PATH) {
    service.reset();
    res.writeHead(204, corsHeaders(req)).end();
    return;
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers.set(name, header(value)!);
  const answer = await service.handle({
    api,
    method: req.method ?? 'GET',
    url,
    headers,
    ...(text === undefined ? {} : { body: text }),
    bodyBytes: bytes,
    utf8,
    clientAddress: req.socket.remoteAddress ?? '127.0.0.1',
  });
  const body = answer.body === undefined ? '' : JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    ...answer.headers,
    ...corsHeaders(req),
    ...(answer.body === undefined ? {} : { 'content-type': answer.contentType ?? 'application/json; charset=utf-8' }),
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

export async function startFront(api: ApiName, service: MockService, listen: { host: string; port: number }): Promise<Front> {
  const server: Server = createServer((req, res) => {
    respond(api, service, req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`mock failed: ${error instanceof Error ? error.message : String(error)}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    origin: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

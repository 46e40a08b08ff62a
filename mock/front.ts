/**
 * The mock's public listener, a thin pass-through to Prism on an internal loopback port that
 * does two things Prism cannot be configured to do:
 * - completes `Prefer: example=<name>` with the status code owning that example (prefer.ts);
 * - answers a request that fails validation the way the server does (400 VALIDATION_ERROR in
 *   the envelope, one entry per problem in details.errors), where Prism would pick the
 *   operation's first 422 example (e.g. INVALID_SOURCE for a missing field);
 * - answers a body that is not JSON (400 INVALID_JSON) or is over 64 KiB (413
 *   PAYLOAD_TOO_LARGE) in the envelope, where Prism answers its own shapes.
 */
import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { preferWithCode, indexExamples } from './prefer.ts';
import type { MockableDocument } from './document.ts';

export interface Front {
  origin: string;
  close(): Promise<void>;
}

interface Violation {
  location?: unknown[];
  code?: unknown;
  message?: string;
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Request violations Prism reported, security (401) and content-type (415) ones excepted. */
function requestViolations(answer: IncomingMessage): Violation[] {
  const raw = header(answer.headers['sl-violations']);
  if (!raw || (answer.statusCode !== 400 && answer.statusCode !== 422)) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const violations = parsed as Violation[];
  if (violations.some((v) => v.code === 401 || v.code === 415)) return [];
  return violations.filter((v) => Array.isArray(v.location) && v.location[0] === 'request');
}

/** Answers in the error envelope, as the server does. */
function sendError(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  error: { code: string; message: string; details: Record<string, unknown> },
  headers: Record<string, string> = {},
): void {
  const supplied = header(req.headers['x-request-id']);
  const requestId = supplied && SAFE_REQUEST_ID.test(supplied) ? supplied : `req_${randomBytes(13).toString('hex')}`;
  const body = JSON.stringify({
    success: false,
    error,
    meta: { request_id: requestId, timestamp: new Date().toISOString() },
  });
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': requestId,
    'access-control-allow-origin': header(req.headers.origin) ?? '*',
    'access-control-expose-headers': '*',
    ...headers,
  });
  res.end(body);
}

function validationError(violations: Violation[]): { code: string; message: string; details: Record<string, unknown> } {
  // The contract's JSON Pointers into the request, as the server writes them: /body/…, /query/…, /path/…, /headers/….
  const errors = violations.map((v) => {
    const [where, ...rest] = (v.location ?? []).slice(1).map(String);
    const section = where === 'header' ? 'headers' : where;
    return {
      path: '/' + [section, ...rest].filter((part) => part !== undefined).map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/'),
      message: v.message ?? 'is not valid',
    };
  });
  return { code: 'VALIDATION_ERROR', message: 'The request is not valid.', details: { errors } };
}

/** The server's body limit (contract: 413 PAYLOAD_TOO_LARGE over 64 KiB). */
const MAX_BODY_BYTES = 64 * 1024;

/** Reads the request body; undefined once it passed the limit (the rest is drained). */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function isJson(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/([\w.+-]*\+)?json\s*(;|$)/i.test(contentType);
}

export async function startFront(
  doc: MockableDocument,
  upstream: { host: string; port: number },
  listen: { host: string; port: number },
): Promise<Front> {
  const index = indexExamples(doc);
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req).catch(() => Buffer.alloc(0));
    if (body === undefined) {
      sendError(req, res, 413, { code: 'PAYLOAD_TOO_LARGE', message: 'The request body is over 64 KiB.', details: { limit_bytes: MAX_BODY_BYTES } });
      return;
    }
    if (body.length > 0 && isJson(req.headers['content-type'])) {
      try {
        JSON.parse(body.toString('utf8'));
      } catch {
        sendError(req, res, 400, { code: 'INVALID_JSON', message: 'The request body is not valid JSON.', details: {} });
        return;
      }
    }
    const headers = { ...req.headers };
    const asked = header(req.headers.prefer);
    const pathname = new URL(req.url ?? '/', 'http://mock.invalid').pathname;
    const prefer = preferWithCode(index, req.method ?? 'GET', pathname, asked);
    if (prefer !== undefined) headers.prefer = prefer;
    // A caller who named a status or example gets exactly what Prism picks.
    const chosen = asked !== undefined && /(?:^|[\s,;])(code|example)=/.test(asked);
    const forward = httpRequest(
      { host: upstream.host, port: upstream.port, method: req.method, path: req.url, headers },
      (answer) => {
        const violations = chosen ? [] : requestViolations(answer);
        if (violations.length > 0) {
          answer.resume();
          // Prism's own report stays available for debugging.
          sendError(req, res, 400, validationError(violations), { 'sl-violations': header(answer.headers['sl-violations']) ?? '[]' });
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('mock upstream failed');
    });
    forward.end(body);
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

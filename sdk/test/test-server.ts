/** Client test helpers: a scripted node:http server on an ephemeral loopback port, and the typed-error expectation. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { ApiClientError } from '../src/errors.ts';

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

export type Script = (req: SeenRequest, res: ServerResponse, index: number) => void;

export interface ScriptedServer {
  origin: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

export async function startScriptedServer(script: Script): Promise<ScriptedServer> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entry: SeenRequest = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      seen.push(entry);
      script(entry, res, seen.length - 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Writes an envelope answer the way the server does. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function errorEnvelope(code: string, message: string, details: Record<string, unknown> = {}): unknown {
  return {
    success: false,
    error: { code, message, details },
    meta: { request_id: 'req_from_body', timestamp: new Date().toISOString() },
  };
}

export function successEnvelope(data: unknown): unknown {
  return { success: true, data, meta: { request_id: 'req_from_body', timestamp: new Date().toISOString() } };
}

/** Resolves to the ApiClientError the promise rejects with; fails the test if it resolves or rejects with anything else. */
export function rejection(promise: Promise<unknown>): Promise<ApiClientError> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => {
      expect(error).toBeInstanceOf(ApiClientError);
      return error as ApiClientError;
    },
  );
}

import { request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directJson } from './json-response.ts';

/** An app answering the same routes through res.json, with or without directJson. */
function app(direct: boolean): express.Express {
  const a = express();
  a.disable('x-powered-by');
  a.set('etag', false);
  if (direct) directJson(a);
  a.get('/small', (_req, res) => {
    res.setHeader('X-Request-Id', 'req_1');
    res.status(200).json({ success: true, text: 'ü € 😀 <&>', n: 1.5, none: null });
  });
  a.get('/big', (_req, res) => {
    res.status(201).json({ items: Array.from({ length: 300 }, (_, i) => `item ${i} é`) });
  });
  a.get('/empty', (_req, res) => {
    res.status(204).json({ ignored: true });
  });
  a.get('/typed', (_req, res) => {
    res.type('application/problem+json').status(400).json({ title: 'bad' });
  });
  a.get('/undefined', (_req, res) => {
    res.json(undefined);
  });
  a.get('/string', (_req, res) => {
    res.status(404).json('just a string');
  });
  return a;
}

interface Raw {
  status: number;
  headers: string[];
  body: string;
}

function raw(port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        // Date may tick between the two answers; everything else must match.
        const pairs: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) if (res.rawHeaders[i] !== 'Date') pairs.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        resolve({ status: res.statusCode ?? 0, headers: pairs, body: Buffer.concat(chunks).toString('latin1') });
      });
    })
      .on('error', reject)
      .end();
  });
}

describe('directJson over real HTTP', () => {
  const servers: Server[] = [];
  let expressPort = 0;
  let directPort = 0;
  beforeAll(async () => {
    const listen = (a: express.Express) =>
      new Promise<number>((resolve) => {
        const s = a.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port));
        servers.push(s);
      });
    expressPort = await listen(app(false));
    directPort = await listen(app(true));
  });
  afterAll(() => {
    for (const s of servers) s.close();
  });

  it.each([
    ['GET', '/small', {}],
    ['GET', '/big', {}],
    ['GET', '/small', { 'if-none-match': '*' }],
    ['GET', '/small', { 'if-modified-since': 'Thu, 01 Jan 2099 00:00:00 GMT' }],
    ['HEAD', '/small', {}],
    ['GET', '/empty', {}],
    ['GET', '/typed', {}],
    ['GET', '/undefined', {}],
    ['GET', '/string', {}],
  ] as Array<[string, string, Record<string, string>]>)('answers %s %s %j with the bytes Express sends', async (method, path, headers) => {
    const ours = await raw(directPort, method, path, headers);
    const theirs = await raw(expressPort, method, path, headers);
    expect(ours).toEqual(theirs);
  });

  it('leaves an app whose JSON settings change the bytes to Express', async () => {
    const a = express();
    a.set('json spaces', 2);
    const before = a.response.json;
    directJson(a);
    expect(a.response.json).toBe(before);
  });
});

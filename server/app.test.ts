import express from 'express';
import { pino } from 'pino';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupBasePath } from '../generated/backup-handlers.ts';
import { toolsBasePath } from '../generated/tools-handlers.ts';
import { settledData, successBody } from './http/envelope.ts';
import { errorHandler } from './http/error-handler.ts';
import { jsonBody } from './http/json-body.ts';
import { GENERATED_DIR, loadDocument, mergeDocuments, openApiValidator } from './http/openapi.ts';
import { requestId } from './http/request-id.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { startHarness, type Harness } from './testing/harness.ts';

describe('HTTP plumbing over real HTTP', () => {
  let h: Harness;
  let token: string;
  beforeAll(async () => {
    h = await startHarness();
    token = await h.tokenFor(await h.newKey());
  });
  afterAll(() => h.cleanup());

  function expectError(res: { status: number; headers: Headers; body: any }, status: number, code: string) {
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ success: false, error: { code, details: expect.any(Object) } });
    expect(res.body.error.message.length).toBeGreaterThan(0);
    expect(res.body.meta.request_id).toBe(res.headers.get('x-request-id'));
    expect(new Date(res.body.meta.timestamp).toISOString()).toBe(res.body.meta.timestamp);
  }

  it('makes a req_ id, or echoes a well-formed client id, in header and meta', async () => {
    const made = await h.request('/api/v1/status');
    expect(made.headers.get('x-request-id')).toMatch(/^req_[0-9A-Z]{26}$/);
    expect(made.body.meta.request_id).toBe(made.headers.get('x-request-id'));
    const echoed = await h.request('/api/v1/status', { headers: { 'X-Request-Id': 'client-1.2:3_x' } });
    expect(echoed.headers.get('x-request-id')).toBe('client-1.2:3_x');
    expect(echoed.body.meta.request_id).toBe('client-1.2:3_x');
    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon']) {
      const replaced = await h.request('/api/v1/status', { headers: { 'X-Request-Id': bad } });
      expect(replaced.headers.get('x-request-id')).toMatch(/^req_/);
    }
  });

  it('answers GET /status with checks and job counts, without rate-limit headers', async () => {
    const res = await h.request('/api/v1/status');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      status: 'ok',
      version: '1.1.0',
      checks: { database: { status: 'ok' }, storage: { status: 'ok' } },
      jobs: { queued: 0, running: 0 },
    });
    expect(res.body.data.uptime_seconds).toBeGreaterThanOrEqual(0);
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    expectError(await h.request('/api/v1/status?verbose=1'), 400, 'VALIDATION_ERROR');
  });

  it('answers unknown paths 404 and wrong methods 405 with Allow, in the envelope', async () => {
    expectError(await h.request('/api/v1/nope'), 404, 'NOT_FOUND');
    expectError(await h.request('/'), 404, 'NOT_FOUND');
    expectError(await h.request('/api/v1/backup/'), 404, 'NOT_FOUND');
    expectError(await h.request('/API/V1/STATUS'), 404, 'NOT_FOUND');
    const wrong = await h.request('/api/v1/backup', { method: 'DELETE' });
    expectError(wrong, 405, 'METHOD_NOT_ALLOWED');
    expect(wrong.headers.get('allow')).toBe('GET, POST');
    expect(wrong.body.error.details.allowed_methods).toEqual(['GET', 'POST']);
    const tools = await h.request('/api/tools/ip-info', { method: 'POST' });
    expectError(tools, 405, 'METHOD_NOT_ALLOWED');
    expect(tools.headers.get('allow')).toBe('GET');
    const head = await fetch(h.base + '/api/v1/status', { method: 'HEAD' });
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('GET');
  });

  it('refuses other media types (415), bodies over 64 KiB (413) and broken JSON (400 INVALID_JSON)', async () => {
    expectError(await h.request('/api/v1/backup', { method: 'POST', token, headers: { 'content-type': 'text/plain' }, body: '{}' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectError(await h.request('/api/v1/backup', { method: 'POST', token, body: 'source=/x' , headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    const big = JSON.stringify({ source: '/' + 'a'.repeat(70 * 1024) });
    expectError(await h.request('/api/v1/backup', { method: 'POST', token, headers: { 'content-type': 'application/json' }, body: big }), 413, 'PAYLOAD_TOO_LARGE');
    expectError(await h.request('/api/v1/backup', { method: 'POST', token, headers: { 'content-type': 'application/json' }, body: '{"source":' }), 400, 'INVALID_JSON');
    expectError(await h.request('/api/newsletter/subscribe', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '"just a string"' }), 400, 'INVALID_JSON');
    for (const encoding of ['gzip', 'br', 'deflate']) {
      const res = await h.request('/api/newsletter/subscribe', { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body: '{"email":"a@b.example","source":"x"}' });
      expectError(res, 400, 'INVALID_JSON');
    }
    const gzipped = await h.request('/api/newsletter/subscribe', { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync('{"email":"gz@b.example","source":"x"}') });
    expect(gzipped.status).toBe(201);
  });

  it('lists every schema problem as a JSON Pointer into the request', async () => {
    const res = await h.request('/api/v1/backup', { method: 'POST', token, json: { source: 'relative', options: { compression: 'lz4' }, extra: true } });
    expectError(res, 400, 'VALIDATION_ERROR');
    const paths = (res.body.error.details.errors as Array<{ path: string }>).map((e) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['/body/source', '/body/options/compression', '/body/extra']));
    const bad = await h.request('/api/v1/backup/not-an-id', { token });
    expectError(bad, 400, 'VALIDATION_ERROR');
    expect(bad.body.error.details.errors[0].path).toBe('/path/id');
    const unknown = await h.request('/api/v1/backup?x=1', { token });
    expectError(unknown, 400, 'VALIDATION_ERROR');
    expect(unknown.body.error.details.errors[0].path).toBe('/query/x');
    const query = await h.request('/api/v1/files?limit=0', { token });
    expect(query.body.error.details.errors[0].path).toBe('/query/limit');
  });
});

describe('response validation', () => {
  it('turns a response body that breaks the contract into 500 INTERNAL_ERROR without internals', async () => {
    const doc = mergeDocuments([
      { doc: loadDocument(GENERATED_DIR, 'backup'), basePath: backupBasePath },
      { doc: loadDocument(GENERATED_DIR, 'tools'), basePath: toolsBasePath },
    ]);
    const logged: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => logged.push(line) });
    const app = express();
    app.use(requestId(), ...jsonBody());
    const validator = await openApiValidator(doc, true);
    // Validation is mounted per operation of the document; a route the document lacks is refused at start.
    expect(() => validator('get', '/api/v1/no-such-path')).toThrow('The document has no operation GET /api/v1/no-such-path');
    let body: unknown = { status: 'ok' };
    app.get('/api/v1/status', ...validator('get', '/api/v1/status'), (_req, res) => {
      res.json(successBody(body, 'req_test'));
    });
    app.use(errorHandler(logger));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/status`;
    try {
      const bad = await fetch(url);
      expect(bad.status).toBe(500);
      const json = (await bad.json()) as any;
      expect(json).toMatchObject({ success: false, error: { code: 'INTERNAL_ERROR', details: {} } });
      expect(JSON.stringify(json)).not.toMatch(/uptime_seconds|required property|stack/);
      expect(logged.join('')).toMatch(/uptime_seconds|required/);

      body = { status: 'ok', version: '1', uptime_seconds: 1, time: new Date().toISOString(), checks: { database: { status: 'ok', latency_ms: 0 }, storage: { status: 'ok', latency_ms: 0 } }, jobs: { queued: 0, running: 0 }, destinations: [] };
      const good = await fetch(url);
      expect(good.status).toBe(200);
    } finally {
      server.close();
    }
  });
});

describe('response validation of settled data', () => {
  it('checks settled data once per object, the envelope on every answer, and anything else in full', async () => {
    const doc = mergeDocuments([
      { doc: loadDocument(GENERATED_DIR, 'backup'), basePath: backupBasePath },
      { doc: loadDocument(GENERATED_DIR, 'tools'), basePath: toolsBasePath },
    ]);
    const validator = await openApiValidator(doc, true);
    /** A valid status whose `status` property counts its reads: the check reads it, and so does JSON.stringify. */
    const counted = (status = 'ok') => {
      const data = { version: '1', uptime_seconds: 1, time: new Date().toISOString(), checks: { database: { status: 'ok', latency_ms: 0 }, storage: { status: 'ok', latency_ms: 0 } }, jobs: { queued: 0, running: 0 }, destinations: [] };
      const reads = { n: 0 };
      Object.defineProperty(data, 'status', { enumerable: true, get: () => (reads.n++, status) });
      return { data, reads };
    };
    let body: unknown;
    const app = express();
    app.use(requestId());
    app.get('/api/v1/status', ...validator('get', '/api/v1/status'), (_req, res) => {
      res.json(body);
    });
    app.use(errorHandler(pino({ level: 'silent' })));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/status`;
    const answer = async () => {
      const res = await fetch(url);
      await res.arrayBuffer();
      return res.status;
    };
    /** Reads of `status` by one answer with `data` in a fresh envelope. */
    const readsOf = async (made: ReturnType<typeof counted>, envelope = (data: object) => successBody(data, 'req_test')) => {
      const before = made.reads.n;
      body = envelope(made.data);
      expect(await answer()).toBe(200);
      return made.reads.n - before;
    };
    try {
      const plain = counted();
      const full = await readsOf(plain);
      expect(full).toBeGreaterThan(1);
      expect(await readsOf(plain)).toBe(full); // not settled: checked in full every time

      const cached = counted();
      settledData(cached.data);
      expect(Object.isFrozen(cached.data.checks)).toBe(true);
      expect(await readsOf(cached)).toBe(full); // checked the first time
      expect(await readsOf(cached)).toBe(1); // then only serialized
      expect(await readsOf(cached)).toBe(1);

      const another = counted();
      settledData(another.data);
      expect(await readsOf(another)).toBe(full); // a new object: checked again

      // The envelope around settled data is checked on every answer.
      body = { ...successBody(cached.data, 'req_test'), meta: { request_id: 'has space', timestamp: 'not a time' } };
      expect(await answer()).toBe(500);
      body = successBody(cached.data, 'req_test');
      expect(await answer()).toBe(200);

      // Settled data that breaks the contract is refused every time, never remembered.
      const broken = counted('no such status');
      settledData(broken.data);
      body = successBody(broken.data, 'req_test');
      expect(await answer()).toBe(500);
      expect(await answer()).toBe(500);
    } finally {
      server.close();
    }
  });
});

describe('validators compiled at start', () => {
  it('compiles every operation\'s request and response validators when it is mounted, none on a first request', async () => {
    const doc = mergeDocuments([
      { doc: loadDocument(GENERATED_DIR, 'backup'), basePath: backupBasePath },
      { doc: loadDocument(GENERATED_DIR, 'tools'), basePath: toolsBasePath },
    ]);
    const validator = await openApiValidator(doc, true);
    const app = express();
    app.set('strict routing', true);
    const operations: Array<{ method: string; path: string; body: boolean }> = [];
    const before = validator.compiled();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const body = (operation as { requestBody?: unknown }).requestBody !== undefined;
        operations.push({ method, path, body });
        const expressPath = path.replace(/\{([^}]+)\}/g, ':$1');
        (app as unknown as Record<string, (...a: unknown[]) => void>)[method]!(expressPath, ...(body ? jsonBody() : []), ...validator(method, path), (_req: unknown, res: express.Response) => {
          res.status(200).json({});
        });
      }
    }
    const mounted = validator.compiled();
    expect(mounted).toBeGreaterThan(before + operations.length);
    app.use(errorHandler(pino({ level: 'silent' })));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const statuses = new Set<number>();
      for (const { method, path, body } of operations) {
        const url = origin + path.replace(/\{[^}]+\}/g, 'x1');
        for (const contentType of body ? ['application/json', 'application/json; charset=utf-8'] : [undefined]) {
          const res = await fetch(url, { method: method.toUpperCase(), ...(contentType ? { headers: { 'content-type': contentType }, body: '{}' } : {}) });
          statuses.add(res.status);
          await res.arrayBuffer();
        }
      }
      // Requests were refused by request validation (400) and reached the handlers, whose answers
      // response validation refused (500): both steps ran, and neither compiled anything.
      expect(statuses).toContain(400);
      expect(statuses).toContain(500);
      expect(validator.compiled()).toBe(mounted);
    } finally {
      server.close();
    }
  });
});

describe('response validation in the assembled app', () => {
  /** The bundled documents, with SystemStatus demanding a property the handler never sends. */
  function stricterSpecDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'spec-'));
    const backup = loadDocument(GENERATED_DIR, 'backup') as any;
    backup.components.schemas.SystemStatus.required.push('never_sent');
    writeFileSync(join(dir, 'backup.openapi.json'), JSON.stringify(backup));
    writeFileSync(join(dir, 'tools.openapi.json'), JSON.stringify(loadDocument(GENERATED_DIR, 'tools')));
    return dir;
  }

  it('checks every handler response when VALIDATE_RESPONSES is on, and not when it is off', async () => {
    const specDir = stricterSpecDir();
    const on = await startHarness({}, { specDir });
    const off = await startHarness({ VALIDATE_RESPONSES: 'false' }, { specDir });
    try {
      const checked = await on.request('/api/v1/status');
      expect(checked.status).toBe(500);
      expect(checked.body.error).toEqual({ code: 'INTERNAL_ERROR', message: expect.any(String), details: {} });
      expect((await off.request('/api/v1/status')).status).toBe(200);
    } finally {
      await on.cleanup();
      await off.cleanup();
      rmSync(specDir, { recursive: true, force: true });
    }
  });
});

describe('a database that cannot serve', () => {
  it('answers 503 SERVICE_UNAVAILABLE with Retry-After, and /status reports degraded', async () => {
    const h = await startHarness();
    try {
      const token = await h.tokenFor(await h.newKey());
      await h.service.services.store.close();
      const res = await h.request('/api/v1/backup', { token });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(res.headers.get('retry-after')).toBe('5');
      const status = await h.request('/api/v1/status');
      expect(status.status).toBe(200);
      expect(status.body.data).toMatchObject({ status: 'degraded', checks: { database: { status: 'failed' }, storage: { status: 'ok' } } });
    } finally {
      await h.cleanup();
    }
  });
});

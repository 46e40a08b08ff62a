// The mock over HTTP: Prism validating, the state layer answering, at the server's paths.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDocument, RESET_PATH, startMock, type MockApi, type RunningMock } from './start.ts';
import type { MockableDocument } from './document.ts';
import { namedExamples, operations, responseValidator, sampleRequest } from './spec-helpers.ts';

let mock: RunningMock;
const docs = {} as Record<MockApi, MockableDocument>;
const KEY = { api_key: 'key_mock_test', secret: 'mock-test-secret-0123456789' };

beforeAll(async () => {
  mock = await startMock({ backupPort: 0, toolsPort: 0, jobSeconds: 1, plan: 'free_trial', allowedRoots: ['/home'] });
  docs.backup = await loadDocument('backup');
  docs.tools = await loadDocument('tools');
});
afterAll(async () => {
  await mock?.close();
});

const baseOf = (api: MockApi): string => (api === 'backup' ? mock.backupUrl : mock.toolsUrl);

interface Answer {
  status: number;
  body: { success?: boolean; data?: Record<string, unknown> & { status?: string; id?: string }; error?: { code: string; details: Record<string, unknown> } };
  headers: Headers;
}

async function call(api: MockApi, path: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(baseOf(api) + path, init);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

async function token(): Promise<string> {
  const answer = await call('backup', '/auth/token', json(KEY));
  expect(answer.status).toBe(200);
  return String(answer.body.data!.access_token);
}

/** Retry-After is the seconds until X-RateLimit-Reset (read a moment later here, so one second may have passed). */
function expectRetryAfterAgrees(headers: Headers): void {
  const left = Number(headers.get('x-ratelimit-reset')) - Math.floor(Date.now() / 1000);
  expect(Number(headers.get('retry-after'))).toBeGreaterThanOrEqual(Math.max(1, left));
  expect(Number(headers.get('retry-after'))).toBeLessThanOrEqual(Math.max(1, left + 1));
}

const withoutMeta = (body: unknown): unknown => (typeof body === 'object' && body !== null ? { ...body, meta: undefined } : body);

describe('mock', () => {
  it('answers at the real server paths, in the envelope for unknown paths and methods', async () => {
    expect(mock.backupUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    const status = await call('backup', '/status', { headers: { 'x-request-id': 'web-1:status' } });
    expect(status).toMatchObject({ status: 200, body: { success: true, data: { status: 'ok' }, meta: { request_id: 'web-1:status' } } });
    expect(status.headers.get('x-request-id')).toBe('web-1:status');
    expect((await call('tools', '/api/tools/ip-info')).body).toMatchObject({ success: true });
    const unknown = await fetch(new URL('/status', mock.backupUrl));
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });
    const method = await call('backup', '/status', { method: 'DELETE' });
    expect(method).toMatchObject({ status: 405, body: { error: { code: 'METHOD_NOT_ALLOWED' } } });
    expect(method.headers.get('allow')).toBe('GET');
  });

  for (const api of ['backup', 'tools'] as const) {
    it(`reaches every named example of every ${api} operation with Prefer: example=<name>`, async () => {
      let checked = 0;
      for (const { method, path, op } of operations(docs[api])) {
        const request = sampleRequest(docs[api], method, path, op);
        for (const example of namedExamples(docs[api], op)) {
          const answer = await call(api, request.path, { method, headers: { ...request.headers, prefer: `example=${example.name}` }, body: request.body });
          expect({ op: op.operationId, name: example.name, status: answer.status, body: withoutMeta(answer.body) }).toEqual({
            op: op.operationId,
            name: example.name,
            status: example.status,
            body: withoutMeta(example.value),
          });
          if (answer.status === 429) {
            expect(answer.headers.get('x-ratelimit-remaining')).toBe('0');
            expectRetryAfterAgrees(answer.headers);
          }
          checked += 1;
        }
      }
      expect(checked).toBeGreaterThan(api === 'backup' ? 50 : 20);
    });
  }

  it('generates schema-valid data with Prefer: dynamic=true', async () => {
    // json-schema-faker cannot honour lookahead in a pattern (documented in docs/mock.md).
    const validate = responseValidator(docs.backup, { withoutLookahead: true });
    for (const { method, path, op } of operations(docs.backup).filter((o) => o.method === 'GET')) {
      const request = sampleRequest(docs.backup, method, path, op);
      const answer = await call('backup', request.path, { headers: { ...request.headers, prefer: 'dynamic=true' } });
      expect(answer.status, op.operationId).toBe(200);
      expect(validate(op, 200, answer.body), op.operationId).toEqual([]);
    }
    const a = await call('backup', '/status', { headers: { prefer: 'dynamic=true' } });
    const b = await call('backup', '/status', { headers: { prefer: 'dynamic=true' } });
    expect(a.body.data).not.toEqual(b.body.data);
  });

  it('requires a token it minted: 401 without one, with a forged one, and TOKEN_EXPIRED once it lapsed', async () => {
    expect((await call('backup', '/backup')).body.error?.code).toBe('UNAUTHORIZED');
    const forged = await call('backup', '/backup', { headers: { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl' } });
    expect(forged).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHORIZED' } } });
    expect(forged.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const shortLived = await startMock({ backupPort: 0, toolsPort: 0, tokenSeconds: 1 });
    try {
      const issued = await fetch(`${shortLived.backupUrl}/auth/token`, json(KEY));
      const { data } = (await issued.json()) as { data: { access_token: string; expires_in: number } };
      expect(data.expires_in).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const expired = await fetch(`${shortLived.backupUrl}/backup`, { headers: { authorization: `Bearer ${data.access_token}` } });
      expect(expired.status).toBe(401);
      expect(await expired.json()).toMatchObject({ error: { code: 'TOKEN_EXPIRED' } });
    } finally {
      await shortLived.close();
    }
  });

  it('keeps a created backup: found by GET and the list, advancing to completed with progress; files; a restore of it', async () => {
    const auth = { authorization: `Bearer ${await token()}` };
    const created = await call('backup', '/backup', json({ source: '/home/ann/documents' }, auth));
    expect(created.status).toBe(202);
    const id = created.body.data!.id!;
    expect(created.headers.get('location')).toBe(`/api/v1/backup/${id}`);
    expect(created.body.data).toMatchObject({ status: 'queued', source: '/home/ann/documents', destination: 'cloud' });
    const statuses = new Set<string>();
    let job = created.body.data!;
    for (let i = 0; i < 40 && job.status !== 'completed'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      job = (await call('backup', `/backup/${id}`, { headers: auth })).body.data!;
      statuses.add(job.status!);
    }
    expect([...statuses]).toEqual(expect.arrayContaining(['running', 'completed']));
    expect(job.progress).toMatchObject({ files_done: job.files_backed_up });
    const listed = await call('backup', '/backup?status=completed', { headers: auth });
    expect((listed.body.data!.items as { id: string }[]).map((j) => j.id)).toContain(id);
    const files = await call('backup', `/files?backup_id=${id}`, { headers: auth });
    expect((files.body.data!.items as unknown[]).length).toBeGreaterThan(0);

    const waited = await call('backup', '/restore', json({ backup_id: id, target_path: '/home/ann/restored' }, { ...auth, prefer: 'wait=5' }));
    expect(waited.status).toBe(202);
    expect(waited.headers.get('preference-applied')).toBe('wait=5');
    expect(waited.body.data).toMatchObject({ status: 'completed', backup_id: id });
    const restore = await call('backup', `/restore/${waited.body.data!.id}`, { headers: auth });
    expect(restore.body.data).toMatchObject({ status: 'completed' });

    expect((await call('backup', '/backup', json({ source: '/etc' }, auth))).body.error?.code).toBe('SOURCE_NOT_ALLOWED');
    expect((await call('backup', '/restore', json({ backup_id: id, target_path: '/tmp/x' }, auth))).body.error?.code).toBe('TARGET_NOT_ALLOWED');
    expect((await call('backup', '/restore', json({ backup_id: id, target_path: '/home/x', paths: ['nope'] }, auth))).body.error).toMatchObject({
      code: 'INVALID_SOURCE',
      details: { path: 'nope' },
    });
    expect((await call('backup', '/backup', json({ source: '/home/a', destination: 'tape' }, auth))).body.error?.code).toBe('DESTINATION_UNAVAILABLE');
    expect((await call('backup', `/backup/${id}/cancel`, { method: 'POST', headers: auth })).body.error?.code).toBe('JOB_FINISHED');
    expect((await call('backup', '/backup/bkp_01M7W3SPMRMFAYEKW7NHTX8GH8', { headers: auth })).status).toBe(404);
    expect(mock.violations).toEqual([]);
  });

  it('validates requests as the server does (400 VALIDATION_ERROR, INVALID_JSON, 413, 415)', async () => {
    const auth = { authorization: `Bearer ${await token()}`, 'x-request-id': 'web-1:test' };
    const invalid = await call('backup', '/backup', json({ destination: 'cloud', surprise: true }, auth));
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('x-request-id')).toBe('web-1:test');
    expect(invalid.body).toMatchObject({ error: { code: 'VALIDATION_ERROR', details: { errors: expect.arrayContaining([expect.objectContaining({ path: '/body' })]) } } });
    const messages = JSON.stringify(invalid.body.error!.details);
    expect(messages).toMatch(/source/);
    expect(messages).toMatch(/surprise/);
    const contact = await call('tools', '/api/contacts/complaints', json({ name: 'Ann', email: 'ann@example.com', subject: 'Hi', message: 'Hello' }));
    expect(contact.body).toMatchObject({ error: { code: 'VALIDATION_ERROR' } });
    const files = await call('backup', '/files?limit=0', { headers: auth });
    expect(files.body).toMatchObject({ error: { code: 'VALIDATION_ERROR', details: { errors: [expect.objectContaining({ path: '/query/limit' })] } } });
    const broken = await call('backup', '/backup', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"source": ' });
    expect(broken).toMatchObject({ status: 400, body: { error: { code: 'INVALID_JSON' } } });
    const large = await call('tools', '/api/contacts/general', json({ name: 'A', email: 'a@example.com', subject: 'S', message: 'x'.repeat(70_000) }));
    expect(large).toMatchObject({ status: 413, body: { error: { code: 'PAYLOAD_TOO_LARGE' } } });
    const text = await call('backup', '/backup', { method: 'POST', headers: { ...auth, 'content-type': 'text/plain' }, body: 'hello' });
    expect(text).toMatchObject({ status: 415, body: { error: { code: 'UNSUPPORTED_MEDIA_TYPE' } } });
  });

  it('counts the account limit down and answers 429 with headers that agree, until reset', async () => {
    mock.reset();
    const auth = { authorization: `Bearer ${await token()}` };
    let last: Answer | undefined;
    const remaining: number[] = [];
    for (let i = 0; i < 101; i++) {
      last = await call('backup', '/backup', { headers: auth });
      remaining.push(Number(last.headers.get('x-ratelimit-remaining')));
    }
    expect(remaining.slice(0, 3)).toEqual([99, 98, 97]);
    expect(last!.status).toBe(429);
    expect(last!.headers.get('x-ratelimit-limit')).toBe('100');
    expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(last!.headers.get('x-ratelimit-reset')) % 3600).toBe(0);
    expectRetryAfterAgrees(last!.headers);

    const answer = await fetch(new URL(RESET_PATH, mock.backupUrl), { method: 'POST' });
    expect(answer.status).toBe(204);
    // The reset forgot the token too.
    expect((await call('backup', '/backup', { headers: auth })).status).toBe(401);
  });

  it('answers a CORS preflight, so browser pages can use it', async () => {
    const response = await fetch(`${mock.backupUrl}/backup`, {
      method: 'OPTIONS',
      headers: { origin: 'http://127.0.0.1:9', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,x-request-id' },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:9');
    expect(response.headers.get('access-control-allow-headers')).toContain('x-request-id');
  });

  it('mocks an operation added to the spec from its examples, with auth, limits and validation', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mock-new-op-'));
    try {
      const backup = JSON.parse(await readFile(new URL('../generated/backup.openapi.json', import.meta.url), 'utf8')) as MockableDocument & { paths: Record<string, Record<string, { operationId: string }>> };
      const added = structuredClone(backup.paths['/backup/{id}']!.get!);
      added.operationId = 'getBackupSummary';
      backup.paths['/backup/{id}/summary'] = { get: added };
      await writeFile(join(dir, 'backup.openapi.json'), JSON.stringify(backup));
      await writeFile(join(dir, 'tools.openapi.json'), await readFile(new URL('../generated/tools.openapi.json', import.meta.url)));
      const extended = await startMock({ backupPort: 0, toolsPort: 0, generatedDir: dir });
      try {
        const path = `${extended.backupUrl}/backup/bkp_01M7W3SPMRMFAYEKW7NHTX8GH8/summary`;
        expect((await fetch(path)).status).toBe(401);
        const issued = (await (await fetch(`${extended.backupUrl}/auth/token`, json(KEY))).json()) as { data: { access_token: string } };
        const answer = await fetch(path, { headers: { authorization: `Bearer ${issued.data.access_token}` } });
        expect(answer.status).toBe(200);
        expect(answer.headers.get('x-ratelimit-remaining')).toBe(String(Number(answer.headers.get('x-ratelimit-limit')) - 1));
        const bad = await fetch(`${extended.backupUrl}/backup/nope/summary`, { headers: { authorization: `Bearer ${issued.data.access_token}` } });
        expect(await bad.json()).toMatchObject({ error: { code: 'VALIDATION_ERROR' } });
        expect(extended.violations).toEqual([]);
      } finally {
        await extended.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

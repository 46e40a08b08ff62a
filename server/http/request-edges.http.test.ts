import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../testing/harness.ts';

/** Sends exactly these bytes (fetch refuses a body on GET and re-encodes strings). */
function raw(base: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const notUtf8 = (before: string, after: string) => Buffer.concat([Buffer.from(before), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(after)]);

describe('request edges over real HTTP', () => {
  let h: Harness;
  let token: string;
  beforeAll(async () => {
    h = await startHarness();
    token = await h.tokenFor(await h.newKey());
  });
  afterAll(() => h.cleanup());

  it.each(['Infinity', '-Infinity', '1e400', '-1e999'])('refuses ?limit=%s with 400 VALIDATION_ERROR, never a 500', async (value) => {
    for (const path of [`/api/v1/backup?limit=${value}`, `/api/v1/files?limit=${value}`]) {
      const res = await h.request(path, { token });
      expect(res.status, path).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'VALIDATION_ERROR', details: { errors: [{ path: '/query/limit' }] } });
    }
  });

  it('refuses a body that is not UTF-8 with 400 INVALID_JSON and stores nothing', async () => {
    const headers = { 'content-type': 'application/json' };
    const subscribe = await raw(h.base, 'POST', '/api/newsletter/subscribe', headers, notUtf8('{"email":"bytes@example.com","source":"web', '"}'));
    expect(subscribe.status).toBe(400);
    expect(subscribe.body.error.code).toBe('INVALID_JSON');
    const contact = await raw(h.base, 'POST', '/api/contacts/general', headers, notUtf8('{"name":"N', '","email":"n@example.com","subject":"s","message":"m"}'));
    expect(contact.body.error.code).toBe('INVALID_JSON');
    // Nothing was stored: the same address subscribes as new (201), not as existing (200).
    const clean = await h.request('/api/newsletter/subscribe', { method: 'POST', json: { email: 'bytes@example.com', source: 'web' } });
    expect(clean.status).toBe(201);
  });

  it('refuses a charset other than UTF-8 with 415', async () => {
    const body = Buffer.from('{"email":"u16@example.com","source":"web"}', 'utf16le');
    const res = await raw(h.base, 'POST', '/api/newsletter/subscribe', { 'content-type': 'application/json; charset=utf-16le' }, body);
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('names the id in details of every not-found answer, as the examples do', async () => {
    const backupId = 'bkp_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    const restoreId = 'rst_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    const answers = [
      await h.request(`/api/v1/backup/${backupId}`, { token }),
      await h.request(`/api/v1/backup/${backupId}/cancel`, { method: 'POST', token }),
      await h.request(`/api/v1/files?backup_id=${backupId}`, { token }),
      await h.request('/api/v1/restore', { method: 'POST', token, json: { backup_id: backupId, target_path: h.root } }),
    ];
    for (const a of answers) expect(a.body.error).toMatchObject({ code: 'BACKUP_NOT_FOUND', details: { backup_id: backupId } });
    const restore = await h.request(`/api/v1/restore/${restoreId}`, { token });
    expect(restore.body.error).toMatchObject({ code: 'RESTORE_NOT_FOUND', details: { restore_id: restoreId } });
  });

  it('does not read a body sent to an operation that takes none: no 413 or 415 there', async () => {
    const big = Buffer.alloc(100 * 1024, 'x');
    const status = await raw(h.base, 'GET', '/api/v1/status', { 'content-type': 'text/plain' }, big);
    expect(status.status).toBe(200);
    const auth = { authorization: `Bearer ${token}` };
    const get = await raw(h.base, 'GET', '/api/v1/backup/bkp_01ARZ3NDEKTSV4RRFFQ69G5FAV', { ...auth, 'content-type': 'application/xml' }, Buffer.from('<x/>'));
    expect(get.body.error.code).toBe('BACKUP_NOT_FOUND');
    const cancel = await raw(h.base, 'POST', '/api/v1/backup/bkp_01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel', { ...auth, 'content-type': 'text/plain' }, big);
    expect(cancel.body.error.code).toBe('BACKUP_NOT_FOUND');
    const ipInfo = await raw(h.base, 'GET', '/api/tools/ip-info', { 'content-type': 'application/json' }, Buffer.from('{not json'));
    expect(ipInfo.status).toBe(200);
    // The operations that take a body still refuse these.
    const create = await raw(h.base, 'POST', '/api/v1/backup', { ...auth, 'content-type': 'text/plain' }, Buffer.from('x'));
    expect(create.status).toBe(415);
  });
});

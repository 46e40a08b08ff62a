import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupBasePath, backupOperations } from '../generated/backup-handlers.ts';
import { toolsBasePath, toolsOperations } from '../generated/tools-handlers.ts';
import { GENERATED_DIR, loadDocument } from './http/openapi.ts';
import { startHarness, type Harness } from './testing/harness.ts';

/** Every operation of both generated tables, with its path parameters filled with well-formed values. */
const operations = [
  ...Object.entries(backupOperations).map(([id, op]) => ({ id, api: 'backup' as const, base: backupBasePath, ...op })),
  ...Object.entries(toolsOperations).map(([id, op]) => ({ id, api: 'tools' as const, base: toolsBasePath, ...op })),
];
const docs = { backup: loadDocument(GENERATED_DIR, 'backup'), tools: loadDocument(GENERATED_DIR, 'tools') };

function concretePath(base: string, path: string): string {
  return (
    base +
    path
      .replace('/backup/{id}', '/backup/bkp_01ARZ3NDEKTSV4RRFFQ69G5FAV')
      .replace('/restore/{id}', '/restore/rst_01ARZ3NDEKTSV4RRFFQ69G5FAV')
      .replace('{type}', 'general')
  );
}

describe('every operation answers the shared errors in the envelope', () => {
  let h: Harness;
  let token: string;
  beforeAll(async () => {
    h = await startHarness();
    token = await h.tokenFor(await h.newKey('business'));
  });
  afterAll(() => h.cleanup());

  for (const op of operations) {
    const hasBody = Boolean((docs[op.api].paths[op.path] as any)[op.method].requestBody);
    const limited = Boolean((docs[op.api].paths[op.path] as any)[op.method]['x-rate-limit']);
    it(`${op.method.toUpperCase()} ${op.base}${op.path} (${op.id})`, async () => {
      const url = concretePath(op.base, op.path);
      const auth = op.security.length ? { token } : {};
      const checks: Array<[string, RequestInit, number, string]> = [[`${url}?zz_unknown=1`, { method: op.method.toUpperCase() }, 400, 'VALIDATION_ERROR']];
      if (hasBody) {
        checks.push(
          [url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
          [url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"x":"${'a'.repeat(66_000)}"}` }, 413, 'PAYLOAD_TOO_LARGE'],
          [url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x":' }, 400, 'INVALID_JSON'],
          [url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"zz_unknown":1}' }, 400, 'VALIDATION_ERROR'],
        );
      }
      if (op.security.length) checks.push([url, { method: op.method.toUpperCase() }, 401, 'UNAUTHORIZED']);
      for (const [path, init, status, code] of checks) {
        const res = await h.request(path, { ...(status === 401 ? {} : auth), ...init });
        expect(res.status, `${code} ${path}`).toBe(status);
        expect(res.body).toMatchObject({ success: false, error: { code, details: expect.any(Object) }, meta: { request_id: res.headers.get('x-request-id') } });
        if (limited) expect(res.headers.get('x-ratelimit-limit'), `${code} headers`).not.toBeNull();
      }
    });
  }

  it('rejects malformed ids with a pointer to the path parameter', async () => {
    for (const path of ['/api/v1/backup/bkp_short/cancel', '/api/v1/restore/rst_short', '/api/v1/restore/bkp_01ARZ3NDEKTSV4RRFFQ69G5FAV']) {
      const res = await h.request(path, { token, method: path.endsWith('cancel') ? 'POST' : 'GET' });
      expect(res.status).toBe(400);
      expect(res.body.error.details.errors[0].path).toBe('/path/id');
    }
  });
});

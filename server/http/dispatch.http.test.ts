import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../testing/harness.ts';

describe('operation dispatch over real HTTP', () => {
  let h: Harness;
  let token: string;
  beforeAll(async () => {
    h = await startHarness();
    token = await h.tokenFor(await h.newKey());
  });
  afterAll(() => h.cleanup());

  it('hands a percent-encoded path parameter to the operation decoded', async () => {
    const id = 'bkp_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    for (const path of [`/api/v1/backup/bkp%5F01ARZ3NDEKTSV4RRFFQ69G5FAV`, `/api/v1/backup/${id.slice(0, -1)}%56/cancel`]) {
      const res = await h.request(path, { method: path.endsWith('/cancel') ? 'POST' : 'GET', token });
      expect(res.status, path).toBe(404);
      expect(res.body.error, path).toMatchObject({ code: 'BACKUP_NOT_FOUND', details: { backup_id: id } });
    }
  });

  it('answers a path parameter that is not a valid escape with a validation error naming it', async () => {
    const res = await h.request('/api/v1/backup/bkp_%E0%A4%A', { token });
    expect(res.body.success).toBe(false);
    expect(res.headers.get('x-request-id')).toBe(res.body.meta.request_id);
    expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' });
    expect(res.body.error.details.errors).toEqual([{ path: '/path/id', message: 'is not valid percent-encoding' }]);
  });

  it('runs the chain of the operation the method names, its refusals included', async () => {
    const id = 'bkp_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    const unauthenticated = await h.request(`/api/v1/backup/${id}`, { method: 'DELETE' });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('www-authenticate')).toMatch(/^Bearer /);
    const deleted = await h.request(`/api/v1/backup/${id}`, { method: 'DELETE', token });
    expect(deleted.body.error.code).toBe('BACKUP_NOT_FOUND');
    expect(deleted.headers.get('x-ratelimit-limit')).not.toBeNull();
    const wrong = await h.request(`/api/v1/backup/${id}`, { method: 'PATCH', token });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('DELETE, GET');
    expect(wrong.headers.get('x-ratelimit-limit')).toBeNull();
  });
});

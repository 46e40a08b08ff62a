// The SDK against its own MSW handlers (@backup-service/client/msw) in a plain vitest run: no
// server at all, the same behaviour as the mock server.
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBackupClient, createToolsClient, followBackup, startRestore, type BackupJob } from '../src/index.ts';
import { createMockHandlers } from '../src/msw/index.ts';
import { rejection } from './test-server.ts';

const mock = createMockHandlers({ jobSeconds: 0.6 });
const server = setupServer(...mock.handlers);
const API = 'http://localhost:8080/api/v1';
const credentials = { apiKey: 'key_frontend_demo', secret: 'sk_frontend_demo_secret_0123456789' };

beforeAll(() => server.listen({ onUnhandledFrame: 'error' }));
afterEach(() => mock.reset());
afterAll(() => server.close());

describe('MSW handlers', () => {
  it('run a backup screen: create, follow queued → running → completed, list, browse, restore', async () => {
    const backup = createBackupClient({ baseUrl: API, ...credentials });
    const seen: BackupJob['status'][] = [];
    const progress: number[] = [];
    const created = await backup.POST('/backup', { body: { source: '/home/ann/documents' } });
    expect(created.response.status).toBe(202);
    expect(created.response.headers.get('location')).toBe(`/api/v1/backup/${created.data!.data.id}`);
    expect(created.data!.data).toMatchObject({ status: 'queued', destination: 'cloud', options: { compression: 'zstd', encryption: true, deduplication: true } });

    const job = await followBackup(backup, created.data!.data, {
      intervalMs: 50,
      onUpdate: (j) => {
        if (seen.at(-1) !== j.status) seen.push(j.status);
        progress.push(j.progress.bytes_done);
      },
    });
    expect(seen).toEqual(['queued', 'running', 'completed']);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(job.files_backed_up).toBeGreaterThan(0);
    expect(job.progress.files_done).toBe(job.progress.files_total);

    const listed = await backup.GET('/backup', {});
    expect(listed.data!.data.items.map((j) => j.id)).toEqual([job.id]);
    const files = await backup.GET('/files', { params: { query: { backup_id: job.id, limit: 2 } } });
    expect(files.data!.data.items).toHaveLength(2);
    const next = await backup.GET('/files', { params: { query: { backup_id: job.id, limit: 2, cursor: files.data!.data.next_cursor! } } });
    expect(next.data!.data.items.length).toBeGreaterThan(0);

    const restored = await startRestore(backup, { backup_id: job.id, target_path: '/home/ann/restored' }, { intervalMs: 50 });
    expect(restored).toMatchObject({ status: 'completed', backup_id: job.id, overwrite: 'never' });
    expect(restored.files_restored).toBe(job.files_backed_up);
  });

  it('cancels a running job, refuses to cancel a finished one, and answers 404 for ids it never issued', async () => {
    const backup = createBackupClient({ baseUrl: API, ...credentials });
    const created = (await backup.POST('/backup', { body: { source: '/srv/data' } })).data!.data;
    const cancelled = await backup.POST('/backup/{id}/cancel', { params: { path: { id: created.id } } });
    expect(cancelled.data!.data.status).toBe('cancelled');
    const again = await rejection(backup.POST('/backup/{id}/cancel', { params: { path: { id: created.id } } }));
    expect(again).toMatchObject({ status: 409, code: 'JOB_FINISHED' });
    const files = await rejection(backup.GET('/files', { params: { query: { backup_id: created.id } } }));
    expect(files).toMatchObject({ status: 409, code: 'BACKUP_NOT_COMPLETED' });
    const unknown = await rejection(backup.GET('/backup/{id}', { params: { path: { id: 'bkp_01M7W3SPMRMFAYEKW7NHTX8GH8' } } }));
    expect(unknown).toMatchObject({ status: 404, code: 'BACKUP_NOT_FOUND' });
  });

  it('requires a token it minted, and keeps accounts apart', async () => {
    const bare = await fetch(`${API}/backup`);
    expect(bare.status).toBe(401);
    expect(await bare.json()).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
    const forged = await fetch(`${API}/backup`, { headers: { authorization: 'Bearer a.b.c' } });
    expect(((await forged.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');

    const ann = createBackupClient({ baseUrl: API, ...credentials });
    const bob = createBackupClient({ baseUrl: API, apiKey: 'key_bob', secret: 'bob-secret-0123456789' });
    const job = (await ann.POST('/backup', { body: { source: '/srv/ann' } })).data!.data;
    expect(await rejection(bob.GET('/backup/{id}', { params: { path: { id: job.id } } }))).toMatchObject({ status: 404 });
  });

  it('counts rate limits down and answers 429 with headers that agree', async () => {
    const tools = createToolsClient({ baseUrl: 'http://localhost:8080', retry: { maxAttempts: 1 } });
    const body = { name: 'Ann', email: 'ann@example.com', subject: 'Hi', message: 'Hello' };
    const remaining: string[] = [];
    for (let i = 0; i < 5; i++) {
      const sent = await tools.POST('/api/contacts/{type}', { params: { path: { type: 'support' } }, body });
      remaining.push(sent.response.headers.get('x-ratelimit-remaining')!);
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    const refused = await fetch('http://localhost:8080/api/contacts/support', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(refused.status).toBe(429);
    const reset = Number(refused.headers.get('x-ratelimit-reset'));
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(refused.headers.get('retry-after'))).toBe(Math.max(1, reset - Math.floor(Date.now() / 1000)));
    expect(reset % 60).toBe(0);
    expect(mock.service.tools.messages).toHaveLength(5);
  });

  it('still answers any example with Prefer, and validates bodies', async () => {
    const forced = await fetch(`${API}/backup/bkp_01M7W3SPMRMFAYEKW7NHTX8GH8`, { headers: { prefer: 'example=running' } });
    expect(forced.status).toBe(200);
    expect(((await forced.json()) as { data: { status: string } }).data.status).toBe('running');
    const limited = await fetch(`${API}/files`, { headers: { prefer: 'example=rate-limited' } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('retry-after'))).toBe(Math.max(1, Number(limited.headers.get('x-ratelimit-reset')) - Math.floor(Date.now() / 1000)));

    const backup = createBackupClient({ baseUrl: API, ...credentials });
    // Deliberately outside the types: a missing source and an unknown property.
    const invalid = await rejection(backup.POST('/backup', { body: { surprise: true } as never }));
    expect(invalid).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    expect(JSON.stringify(invalid.details)).toMatch(/source/);
  });

  it('tells new subscribers from repeats', async () => {
    const tools = createToolsClient({ baseUrl: 'http://localhost:8080' });
    const first = await tools.POST('/api/newsletter/subscribe', { body: { email: 'Ann@Example.COM', source: 'footer' } });
    const again = await tools.POST('/api/newsletter/subscribe', { body: { email: 'Ann@example.com', source: 'popup' } });
    expect([first.response.status, again.response.status]).toEqual([201, 200]);
    expect(again.data!.data).toMatchObject({ email: 'Ann@example.com', source: 'footer' });
  });
});

// The SDK against the mock server (npm run mock, here on ephemeral ports, jobs of half a second).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMock, type RunningMock } from '../../mock/start.ts';
import { createBackupClient, createToolsClient, startBackup, type BackupClient, type BackupJob } from '../src/index.ts';
import { rejection } from './test-server.ts';

let mock: RunningMock;
let backup: BackupClient;
const credentials = { apiKey: 'key_frontend_demo', secret: 'sk_frontend_demo_secret_0123456789' };

beforeAll(async () => {
  mock = await startMock({ backupPort: 0, toolsPort: 0, jobSeconds: 0.5 });
  backup = createBackupClient({ baseUrl: mock.backupUrl, ...credentials, retry: { baseDelayMs: 10 } });
});
afterAll(async () => {
  await mock?.close();
});

describe('clients against the mock', () => {
  it('obtains a token, then creates, reads and lists backups', async () => {
    const created = await backup.POST('/backup', { body: { source: '/srv/documents', destination: 'cloud' } });
    expect(created.response.status).toBe(202);
    expect(created.data?.data).toMatchObject({ status: 'queued', source: '/srv/documents' });
    expect(backup.currentToken()).toMatch(/^ey/);

    const job = await backup.GET('/backup/{id}', { params: { path: { id: created.data!.data.id } } });
    expect(job.data?.data.id).toBe(created.data!.data.id);

    const list = await backup.GET('/backup', { params: { query: { limit: 10 } } });
    expect(list.data?.data.items.map((j) => j.id)).toContain(created.data!.data.id);

    const status = await backup.GET('/status');
    expect(status.data?.data.status).toBe('ok');
  });

  it('surfaces an error example as ApiClientError with code, message, details and request id', async () => {
    const error = await rejection(
      backup.POST('/backup', {
        body: { source: '/srv/missing' },
        headers: { Prefer: 'example=invalid-source', 'X-Request-Id': 'web-42:test' },
      }),
    );
    expect(error.status).toBe(422);
    expect(error.code).toBe('INVALID_SOURCE');
    expect(error.details).toHaveProperty('path');
    expect(error.message.length).toBeGreaterThan(0);
    expect(error.requestId).toBeTruthy();
    expect(error.attempts).toBe(1);
  });

  it('surfaces the mock\'s validation answer as VALIDATION_ERROR', async () => {
    const error = await rejection(
      // Deliberately outside the types: a relative source path.
      backup.POST('/backup', { body: { source: 'relative/path' } }),
    );
    expect(error).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    expect(error.details).toHaveProperty('errors');
  });

  it('does not sit out the long Retry-After of the mock\'s 503 example', async () => {
    const retried: number[] = [];
    const client = createBackupClient({
      baseUrl: mock.backupUrl,
      ...credentials,
      retry: { maxAttempts: 3, baseDelayMs: 5 },
      onRetry: (event) => retried.push(event.attempt),
    });
    const busy = await rejection(client.GET('/files', { headers: { Prefer: 'example=service-unavailable' } }));
    // The example carries Retry-After: 1713, beyond the 60 s the client is willing to wait.
    expect(busy).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', attempts: 1, retryAfterMs: 1_713_000 });
    expect(retried).toEqual([]);
  });

  it('follows a backup to its end with startBackup, then lists its files', async () => {
    const seen: BackupJob['status'][] = [];
    const job = await startBackup(backup, { source: '/srv/documents' }, { intervalMs: 50, onUpdate: (j) => seen.push(j.status) });
    expect(job.status).toBe('completed');
    // Prefer: wait=5 held the first answer until the half-second job ended.
    expect(seen).toEqual(['completed']);
    const files = await backup.GET('/files', {});
    expect(files.data?.data).toMatchObject({ backup_id: job.id });
    expect(files.data?.data.items.length).toBeGreaterThan(0);
  });

  it('uses the public tools without credentials', async () => {
    const tools = createToolsClient({ baseUrl: mock.toolsUrl });
    const check = await tools.POST('/api/tools/check-site', { body: { url: 'https://example.com' } });
    expect(check.data?.data.status).toBe('up');
    const ip = await tools.GET('/api/tools/ip-info');
    expect(ip.data?.data.ip).toBeTruthy();
    const subscribed = await tools.POST('/api/newsletter/subscribe', { body: { email: 'ann@example.com', source: 'footer' } });
    expect(subscribed.response.status).toBe(201);
    const contact = await tools.POST('/api/contacts/{type}', {
      params: { path: { type: 'support' } },
      body: { name: 'Ann', email: 'ann@example.com', subject: 'Hello', message: 'A question.' },
    });
    expect(contact.data?.data.id).toMatch(/^msg_/);
    const refused = await rejection(
      tools.POST('/api/tools/check-site', { body: { url: 'http://127.0.0.1/' }, headers: { Prefer: 'example=url-not-allowed' } }),
    );
    expect(refused).toMatchObject({ status: 422, code: 'URL_NOT_ALLOWED' });
  });
});

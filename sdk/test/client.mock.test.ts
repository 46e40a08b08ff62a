// The typed clients against the mock (npm run mock, here on ephemeral ports).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMock, type RunningMock } from '../../mock/start.ts';
import { createBackupClient, createToolsClient, type BackupClient } from '../src/index.ts';
import { createAndPoll, type BackupJob } from './examples/create-and-poll.ts';
import { rejection } from './test-server.ts';

let mock: RunningMock;
let backup: BackupClient;
const credentials = { apiKey: 'key_frontend_demo', secret: 'sk_frontend_demo_secret_0123456789' };

beforeAll(async () => {
  mock = await startMock({ backupPort: 0, toolsPort: 0 });
  backup = createBackupClient({ baseUrl: mock.backupUrl, ...credentials, retry: { baseDelayMs: 10 } });
});
afterAll(async () => {
  await mock?.close();
});

describe('clients against the mock', () => {
  it('obtains a token, then creates, reads and lists backups', async () => {
    const created = await backup.POST('/backup', { body: { source: '/srv/documents', destination: 'cloud' } });
    expect(created.response.status).toBe(202);
    expect(created.data?.data.id).toMatch(/^bkp_/);
    expect(backup.currentToken()).toMatch(/^ey/);

    const job = await backup.GET('/backup/{id}', { params: { path: { id: created.data!.data.id } } });
    expect(job.data?.data.status).toBe('completed');

    const list = await backup.GET('/backup', { params: { query: { limit: 10 } } });
    expect(Array.isArray(list.data?.data.items)).toBe(true);

    const files = await backup.GET('/files', {});
    expect(files.data?.data.items.length).toBeGreaterThan(0);

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

  it('runs the frontend example: create a backup and follow it to the end', async () => {
    const seen: BackupJob['status'][] = [];
    const job = await createAndPoll(backup, { source: '/srv/documents' }, { intervalMs: 10, onUpdate: (j) => seen.push(j.status) });
    expect(job.status).toBe('completed');
    expect(seen[0]).toBe('queued');
    expect(seen.at(-1)).toBe('completed');
  });

  it('uses the public tools without credentials', async () => {
    const tools = createToolsClient({ baseUrl: mock.toolsUrl });
    const check = await tools.POST('/api/tools/check-site', { body: { url: 'https://example.com' } });
    expect(check.data?.data.status).toBe('up');
    const ip = await tools.GET('/api/tools/ip-info');
    expect(ip.data?.data.ip).toBeTruthy();
    const subscribed = await tools.POST('/api/newsletter/subscribe', { body: { email: 'ann@example.com', source: 'footer' } });
    expect([200, 201]).toContain(subscribed.response.status);
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

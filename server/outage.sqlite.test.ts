import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHarness } from './testing/harness.ts';

// The embedded store when another process (the keys command, an operator's sqlite3) holds its lock.
describe('a database locked by another process', () => {
  it('answers writes 503 after the busy timeout, keeps reads working, and /status says degraded', async () => {
    const h = await startHarness();
    try {
      const token = await h.tokenFor(await h.newKey());
      const other = new DatabaseSync(join(h.dataDir, 'service.db'));
      other.exec('BEGIN EXCLUSIVE');
      try {
        const write = await h.request('/api/newsletter/subscribe', { method: 'POST', json: { email: 'locked@example.com', source: 't' } });
        expect(write.status).toBe(503);
        expect(write.body.error.code).toBe('SERVICE_UNAVAILABLE');
        expect((await h.request('/api/v1/backup', { token })).status).toBe(200);
        const status = await h.request('/api/v1/status');
        expect(status.body.data).toMatchObject({ status: 'degraded', checks: { database: { status: 'failed' } } });
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      expect((await h.request('/api/newsletter/subscribe', { method: 'POST', json: { email: 'locked@example.com', source: 't' } })).status).toBe(201);
      expect((await h.request('/api/v1/status')).body.data.status).toBe('ok');
    } finally {
      await h.cleanup();
    }
  });
});


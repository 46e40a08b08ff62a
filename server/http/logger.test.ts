import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { startHarness } from '../testing/harness.ts';
import { createLogger } from './logger.ts';

describe('request logs', () => {
  it('carry the request id and never a secret or a token', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger('debug', sink);
    const h = await startHarness({}, { logger });
    try {
      const key = await h.newKey();
      const token = await h.tokenFor(key);
      await h.request('/api/v1/backup?cursor=abc', { token, headers: { 'X-Request-Id': 'trace-me-42' } });
      await h.request('/api/v1/auth/token', { method: 'POST', json: { api_key: key.apiKey, secret: `${key.secret}-wrong` } });
      await h.request('/api/v1/auth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"secret":"${key.secret}"` });
      logger.info({ secret: key.secret, token, req: { headers: { authorization: `Bearer ${token}` } } }, 'redaction check');
    } finally {
      await h.cleanup();
    }
    const text = lines.join('');
    expect(text).toContain('"request_id":"trace-me-42"');
    expect(text).toContain('redaction check');
    expect(text).not.toContain('sk_');
    expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/);
    expect(text).not.toContain('cursor=abc');
  });

  it('logs successful probe requests at debug, so orchestrators polling them do not flood the log', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const h = await startHarness({}, { logger: createLogger('debug', sink) });
    try {
      await h.request('/livez', { headers: { 'X-Request-Id': 'probe-live' } });
      await h.request('/readyz?bad=1', { headers: { 'X-Request-Id': 'probe-bad' } });
      await h.request('/api/v1/status', { headers: { 'X-Request-Id': 'status-1' } });
    } finally {
      await h.cleanup();
    }
    const level = (id: string) => (JSON.parse(lines.find((l) => l.includes(`"request_id":"${id}"`) && l.includes('"msg":"request"'))!) as { level: number }).level;
    expect(level('probe-live')).toBe(20);
    expect(level('probe-bad')).toBe(30);
    expect(level('status-1')).toBe(30);
  });
});

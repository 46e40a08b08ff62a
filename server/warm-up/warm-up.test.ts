import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListeningServer } from '../testing/processes.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { sampleSum, scrape } from '../testing/scrape.ts';

describe('the warm-up before the service listens', () => {
  let h: Harness;
  const lines: Array<{ msg: string }> = [];
  let report: Awaited<ReturnType<Harness['service']['warmUp']>>;
  let metricsUrl: string;
  let auditBefore: number;

  beforeAll(async () => {
    const log = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as { msg: string });
        done();
      },
    });
    h = await startHarness({ TRUST_PROXY: 'loopback' }, { logger: pino({ level: 'info' }, log) });
    const metricsServer = (await h.service.listenMetrics(0, '127.0.0.1'))!;
    metricsUrl = `http://127.0.0.1:${(metricsServer.address() as AddressInfo).port}/metrics`;
    auditBefore = readFileSync(h.env.AUDIT_LOG!, 'utf8').length;
    // The warm-up's temporary directory goes into one of this test's own (each test file runs in a
    // process of its own), where no other test's come and go: nothing may be left there.
    const tmp = mkdtempSync(join(tmpdir(), 'warm-up-tmp-'));
    const tmpBefore = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      report = await h.service.warmUp(200);
    } finally {
      if (tmpBefore === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmpBefore;
    }
    expect(readdirSync(tmp)).toEqual([]);
    rmSync(tmp, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it('sends every operation of the public tools API, each answered 2xx by the code the service runs', () => {
    // 200 requests from 200 clients: each starts at its own place in the mix, so every operation
    // (check-site up and down, ip-info, subscribe, contact) is sent 20 times or more.
    expect(report).toMatchObject({ requests: 200, failed: 0 });
  });

  it("leaves nothing in the service's store, log, metrics, audit log or rate limits", async () => {
    expect(await h.service.services.store.newsletter.count()).toBe(0);
    expect(await h.service.services.store.contacts.count()).toBe(0);
    expect(lines.filter((l) => l.msg === 'request')).toEqual([]);
    expect(sampleSum((await scrape(metricsUrl)).samples, 'backup_http_requests_total') ?? 0).toBe(0);
    expect(readFileSync(h.env.AUDIT_LOG!, 'utf8').length).toBe(auditBefore);
    // The warm-up's first client connected from 127.0.1.1: the service's own limits have never seen it
    // (the service trusts a loopback proxy here, so this request counts as that address's).
    const res = await h.request('/api/tools/ip-info', { headers: { 'x-forwarded-for': '127.0.1.1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('29');
  });

  it("keeps the service's check-site policy: loopback targets stay refused", async () => {
    const res = await h.request('/api/tools/check-site', { method: 'POST', json: { url: `http://127.0.0.1:${new URL(h.base).port}/livez` } });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('URL_NOT_ALLOWED');
  });
});

describe('npm start', () => {
  it('warms up before it listens (WARM_UP_REQUESTS), and says so in the log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warm-up-start-'));
    const p = await startListeningServer({ DATA_DIR: join(dir, 'data'), MASTER_KEY_FILE: join(dir, 'keys', 'master.key'), BACKUP_ALLOWED_ROOTS: dir, WARM_UP_REQUESTS: '100' });
    try {
      const out = p.output().split('\n');
      const warmed = out.findIndex((l) => l.includes('"warmed up"'));
      expect(warmed).toBeGreaterThanOrEqual(0);
      expect(warmed).toBeLessThan(out.findIndex((l) => l.includes('backup service listening')));
      expect(JSON.parse(out[warmed]!).warm_up).toMatchObject({ requests: 100, failed: 0 });
      expect(out.filter((l) => l.includes('"msg":"request"'))).toEqual([]);
      expect(existsSync(join(dir, 'data'))).toBe(true);
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('starts all the same when the warm-up fails, and says why', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warm-up-start-'));
    // No temporary directory for the warm-up's store.
    const p = await startListeningServer({ DATA_DIR: join(dir, 'data'), MASTER_KEY_FILE: join(dir, 'keys', 'master.key'), BACKUP_ALLOWED_ROOTS: dir, WARM_UP_REQUESTS: '100', TMPDIR: join(dir, 'missing') });
    try {
      const failed = p.output().split('\n').find((l) => l.includes('"warm-up failed; serving without it"'));
      expect(failed).toBeDefined();
      expect(JSON.parse(failed!).err.message).toMatch(/missing/);
      expect((await fetch(`http://127.0.0.1:${p.port}/livez`)).status).toBe(200);
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

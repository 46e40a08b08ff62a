import { randomBytes } from 'node:crypto';
import { mkdirSync, openSync, readdirSync, readSync, statSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../ids.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { promtoolCheckMetrics, sampleSum, scrape, type Sample } from '../testing/scrape.ts';
import { requirePackages } from '../testing/services/packages.ts';

/** prom-client's own default gauges named `*_total` (lint findings that are not ours to fix). */
const DEFAULT_METRIC_FINDINGS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** Label names our metrics may carry: every one of them has a closed set of values. */
const OUR_LABELS = new Set(['operation', 'status_class', 'limit', 'reason', 'kind', 'status', 'error_code', 'state', 'destination', 'le']);

/** Flips a byte in the middle of every file under `dir` (a repository: its packs fail their checks). */
function corruptEveryFile(dir: string): void {
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    const size = statSync(path).size;
    if (size === 0) continue;
    const fd = openSync(path, 'r+');
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, Math.floor(size / 2));
    byte[0] = byte[0]! ^ 0xff;
    writeSync(fd, byte, 0, 1, Math.floor(size / 2));
    closeSync(fd);
  }
}

describe('/metrics after real traffic', () => {
  let h: Harness;
  let metricsServer: Server;
  let url: string;
  let before: Sample[];
  let after: { text: string; samples: Sample[]; contentType: string | null };
  const secrets: string[] = [];
  const ids: string[] = [];
  const accounts: string[] = [];
  const paths: string[] = [];
  const bytes = { backup: 0, restore: 0, stored: { local: 0, cloud: 0 } };
  const started = Date.now() / 1000;
  let restoreFailure: string;

  const delta = (name: string, labels: Record<string, string> = {}): number =>
    (sampleSum(after.samples, name, labels) ?? 0) - (sampleSum(before, name, labels) ?? 0);

  beforeAll(async () => {
    requirePackages(['prometheus']);
    // A long job lease: the queue then looks for work only when told, so a job put in the shared queue directly stays queued.
    h = await startHarness({ JOB_LEASE_MS: '600000' });
    metricsServer = (await h.service.listenMetrics(0, '127.0.0.1'))!;
    url = `http://127.0.0.1:${(metricsServer.address() as AddressInfo).port}/metrics`;
    before = (await scrape(url)).samples;

    // Six accounts each back up their own directory (two destinations), one restores it.
    const tokens: string[] = [];
    for (let i = 0; i < 6; i++) {
      const key = await h.newKey('business');
      const token = await h.tokenFor(key);
      secrets.push(key.secret, token);
      tokens.push(token);
      ids.push(key.apiKey, key.accountId);
      accounts.push(key.accountId);
      const source = join(h.root, `account-${i}`);
      mkdirSync(source);
      writeFileSync(join(source, 'notes.txt'), `notes of account ${i}\n`.repeat(100 + i));
      writeFileSync(join(source, 'data.bin'), randomBytes(20_000 + i * 1000));
      paths.push(source);
      const destination = i % 2 === 0 ? 'local' : 'cloud';
      const res = await h.request('/api/v1/backup', { method: 'POST', token, json: { source, destination }, headers: { Prefer: 'wait=25' } });
      expect(res.body.data.status).toBe('completed');
      ids.push(res.body.data.id);
      bytes.backup += res.body.data.size_bytes;
      bytes.stored[destination] += res.body.data.stored_bytes;
    }
    const backupOf = async (token: string) => (await h.request('/api/v1/backup?limit=1', { token })).body.data.items[0];
    const first = await backupOf(tokens[0]!);
    const target = join(h.root, 'restored');
    const restored = await h.request('/api/v1/restore', { method: 'POST', token: tokens[0], json: { backup_id: first.id, target_path: target }, headers: { Prefer: 'wait=25' } });
    expect(restored.body.data.status).toBe('completed');
    bytes.restore += restored.body.data.size_bytes;
    paths.push(target);

    // A failed job: account 1's repository is damaged, so its restore fails at run time.
    const second = await backupOf(tokens[1]!);
    corruptEveryFile(join(h.dataDir, 'repositories', accounts[1]!, 'cloud'));
    const failed = await h.request('/api/v1/restore', {
      method: 'POST',
      token: tokens[1],
      json: { backup_id: second.id, target_path: join(h.root, 'restored-1') },
      headers: { Prefer: 'wait=25' },
    });
    expect(failed.body.data.status).toBe('failed');
    restoreFailure = failed.body.data.error.code;

    // 401s: no token, a forged token, an unknown key's credentials.
    expect((await h.request('/api/v1/backup')).status).toBe(401);
    expect((await h.request('/api/v1/backup', { token: 'not.a.token' })).status).toBe(401);
    expect((await h.request('/api/v1/auth/token', { method: 'POST', json: { api_key: 'key_unknown', secret: 'x'.repeat(20) } })).status).toBe(401);

    // A 429: ip-info allows 30 per minute per address.
    let limited = 0;
    for (let i = 0; i < 31; i++) if ((await h.request('/api/tools/ip-info')).status === 429) limited++;
    expect(limited).toBeGreaterThanOrEqual(1);

    // An e-mail address in a request must not reach a label either.
    expect((await h.request('/api/newsletter/subscribe', { method: 'POST', json: { email: 'someone@example.com', source: 'metrics-test' } })).status).toBe(201);

    after = await scrape(url);
  });
  afterAll(async () => {
    metricsServer?.close();
    await h?.cleanup();
  });

  it('counts and times HTTP requests by operation and status class', () => {
    expect(delta('backup_http_requests_total', { operation: 'createBackup', status_class: '2xx' })).toBe(6);
    expect(delta('backup_http_request_duration_seconds_count', { operation: 'createBackup', status_class: '2xx' })).toBe(6);
    expect(delta('backup_http_requests_total', { operation: 'createToken', status_class: '2xx' })).toBe(6);
    expect(delta('backup_http_requests_total', { operation: 'createToken', status_class: '4xx' })).toBe(1);
    expect(delta('backup_http_requests_total', { operation: 'listBackups', status_class: '4xx' })).toBe(2);
    expect(delta('backup_http_requests_total', { operation: 'getIpInfo', status_class: '4xx' })).toBeGreaterThanOrEqual(1);
    // A Prefer: wait backup takes longer than nothing, and every observation lands in some bucket.
    expect(delta('backup_http_request_duration_seconds_sum', { operation: 'createBackup' })).toBeGreaterThan(0);
    expect(delta('backup_http_request_duration_seconds_bucket', { operation: 'createBackup', status_class: '2xx', le: '+Inf' })).toBe(6);
  });

  it('counts refusals: rate-limit rejections by limit, auth failures by reason, tokens issued', () => {
    expect(delta('backup_rate_limit_rejections_total', { limit: 'tools-getIpInfo' })).toBeGreaterThanOrEqual(1);
    expect(delta('backup_auth_failures_total', { reason: 'UNAUTHORIZED' })).toBe(2);
    expect(delta('backup_auth_failures_total', { reason: 'INVALID_CREDENTIALS' })).toBe(1);
    expect(delta('backup_tokens_issued_total')).toBe(6);
  });

  it('counts jobs created and finished by kind, status and error code, with durations and bytes', () => {
    expect(delta('backup_jobs_created_total', { kind: 'backup' })).toBe(6);
    expect(delta('backup_jobs_created_total', { kind: 'restore' })).toBe(2);
    expect(delta('backup_jobs_finished_total', { kind: 'backup', status: 'completed', error_code: '' })).toBe(6);
    expect(delta('backup_jobs_finished_total', { kind: 'restore', status: 'completed', error_code: '' })).toBe(1);
    expect(restoreFailure).toMatch(/^[A-Z_]+$/);
    expect(delta('backup_jobs_finished_total', { kind: 'restore', status: 'failed', error_code: restoreFailure })).toBe(1);
    expect(delta('backup_job_duration_seconds_count', { kind: 'backup' })).toBe(6);
    expect(delta('backup_job_duration_seconds_count', { kind: 'restore' })).toBe(2);
    expect(delta('backup_job_queue_wait_seconds_count', { kind: 'backup' })).toBe(6);
    expect(delta('backup_job_read_bytes_total', { kind: 'backup' })).toBe(bytes.backup);
    expect(delta('backup_job_read_bytes_total', { kind: 'restore' })).toBe(bytes.restore);
    expect(delta('backup_job_stored_bytes_total', { kind: 'backup' })).toBe(bytes.stored.local + bytes.stored.cloud);
    expect(sampleSum(after.samples, 'backup_instance_jobs_running')).toBe(0);
  });

  it('reads the shared state from the database: queue, last backup and repository bytes by destination', async () => {
    const now = Date.now() / 1000;
    for (const destination of ['local', 'cloud'] as const) {
      const last = sampleSum(after.samples, 'backup_cluster_last_successful_backup_timestamp_seconds', { destination })!;
      expect(last).toBeGreaterThanOrEqual(Math.floor(started) - 1);
      expect(last).toBeLessThanOrEqual(now + 1);
      expect(sampleSum(after.samples, 'backup_cluster_repository_stored_bytes', { destination })).toBe(bytes.stored[destination]);
    }
    expect(sampleSum(after.samples, 'backup_cluster_jobs', { state: 'queued' })).toBe(0);
    expect(sampleSum(after.samples, 'backup_cluster_oldest_queued_job_age_seconds')).toBe(0);

    // A job waiting in the shared queue (as another instance would have put it there).
    const { store, queue } = h.service.services;
    const id = newId('bkp');
    const job = { id, accountId: accounts[0]!, repository: `${accounts[0]}/local`, source: paths[0]!, destination: 'local' };
    expect(await store.jobs.insertBackup({ ...job, compression: 'zstd', encryption: true, deduplication: true }, 100)).not.toBeNull();
    await new Promise((r) => setTimeout(r, 1100));
    const waiting = (await scrape(url)).samples;
    expect(sampleSum(waiting, 'backup_cluster_jobs', { state: 'queued' })).toBe(1);
    expect(sampleSum(waiting, 'backup_cluster_oldest_queued_job_age_seconds')).toBeGreaterThanOrEqual(1);
    expect(await queue.cancel(id)).toBe(true);
  });

  it('reports free space where the repositories live, and the default process metrics', async () => {
    // Other work on the machine writes to the same disk: bracket a fresh scrape between two readings.
    const freeNow = async () => {
      const fs = await statfs(join(h.dataDir, 'repositories'));
      return fs.bavail * fs.bsize;
    };
    const before = await freeNow();
    const fresh = (await scrape(url)).samples;
    const later = await freeNow();
    const free = sampleSum(fresh, 'backup_storage_free_bytes')!;
    const margin = 64 * 1024 * 1024;
    expect(free).toBeGreaterThanOrEqual(Math.min(before, later) - margin);
    expect(free).toBeLessThanOrEqual(Math.max(before, later) + margin);
    expect(sampleSum(fresh, 'backup_storage_free_threshold_bytes')).toBeGreaterThan(0);
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(sampleSum(after.samples, name), name).toBeDefined();
    }
    expect(after.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('carries no account, key, job id, token, secret, path or e-mail address, in labels or anywhere', () => {
    for (const s of after.samples) {
      for (const [name, value] of Object.entries(s.labels)) {
        if (s.name.startsWith('backup_')) expect(OUR_LABELS.has(name), `${s.name} label ${name}`).toBe(true);
        expect(value, `${s.name}{${name}}`).not.toMatch(/[/@]|^(acc|key|bkp|rst|req)_/);
      }
    }
    for (const text of [...secrets, ...ids, ...paths, 'someone@example.com', 'example.com']) expect(after.text).not.toContain(text);
  });

  it('passes promtool check metrics, except prom-client default gauges named *_total', () => {
    const findings = promtoolCheckMetrics(after.text);
    const ours = findings.filter((line) => !DEFAULT_METRIC_FINDINGS.some((name) => line.startsWith(`${name} `)));
    expect(ours).toEqual([]);
  });

  it('is served on its own listener only: not on the API port, never rate limited', async () => {
    expect((await h.request('/metrics')).status).toBe(404);
    const scrapes = await Promise.all(Array.from({ length: 40 }, () => fetch(url)));
    for (const res of scrapes) {
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
      await res.arrayBuffer();
    }
    expect((await fetch(url.replace('/metrics', '/'))).status).toBe(404);
  });

  // Last: it closes the database.
  it('still answers with the database down, the shared gauges absent rather than stale', async () => {
    await h.service.services.store.close();
    const down = (await scrape(url)).samples;
    expect(sampleSum(down, 'backup_cluster_jobs')).toBeUndefined();
    expect(sampleSum(down, 'backup_cluster_last_successful_backup_timestamp_seconds')).toBeUndefined();
    expect(sampleSum(down, 'backup_storage_free_bytes')).toBeGreaterThan(0);
    expect(sampleSum(down, 'backup_http_requests_total', { operation: 'createBackup' })).toBeGreaterThanOrEqual(6);
  });
});

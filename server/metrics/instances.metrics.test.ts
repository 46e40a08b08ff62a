import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../auth/api-keys.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { sampleSum, scrape, type Sample } from '../testing/scrape.ts';
import { startPostgres, type PostgresServer } from '../testing/services/postgres.ts';

/**
 * Two instances on one PostgreSQL and shared storage, each scraped on its own listener: what an
 * instance did is counted by that instance only (summing instances counts each job once), and
 * the shared state reads the same on both (aggregate with max()).
 */
describe('metrics of several instances', () => {
  let pg: PostgresServer;
  let dir: string;
  const instances: Harness[] = [];
  const urls: string[] = [];
  const before: Sample[][] = [];
  const after: Sample[][] = [];
  const taken = [0, 0];
  const completed: Array<{ destination: string; size: number; stored: number }> = [];

  const delta = (i: number, name: string, labels: Record<string, string> = {}): number =>
    (sampleSum(after[i]!, name, labels) ?? 0) - (sampleSum(before[i]!, name, labels) ?? 0);
  const total = (name: string, labels: Record<string, string> = {}): number => delta(0, name, labels) + delta(1, name, labels);

  beforeAll(async () => {
    pg = await startPostgres();
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'instances-metrics-')));
    const env = { DATABASE_URL: await pg.createDatabase(), JOB_CONCURRENCY: '2' };
    instances.push(...(await Promise.all([0, 1].map(() => startHarness(env, {}, dir)))));
    for (const h of instances) {
      const server = (await h.service.listenMetrics(0, '127.0.0.1'))!;
      urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`);
    }
    for (const url of urls) before.push((await scrape(url)).samples);

    // Two accounts, twelve backups, each request sent to one instance or the other; either may run it.
    const [first] = instances;
    const keys = await Promise.all([0, 1].map(() => createApiKey(first!.service.services.store, { plan: 'business' })));
    const ids: string[] = [];
    for (let n = 0; n < 12; n++) {
      const src = join(first!.root, `src${n}`);
      mkdirSync(src, { recursive: true });
      writeFileSync(join(src, 'a.txt'), `backup ${n}\n`.repeat(50 + n));
      const i = n % 2;
      const res = await instances[i]!.request('/api/v1/backup', {
        method: 'POST',
        token: await instances[i]!.tokenFor(keys[n % 2]!),
        json: { source: src, destination: n % 3 === 0 ? 'local' : 'cloud' },
      });
      expect(res.status).toBe(202);
      ids.push(res.body.data.id);
      taken[i]!++;
    }
    for (const id of ids) expect(await first!.service.services.queue.waitSettled(id, 60_000)).toBe(true);
    for (const id of ids) {
      const job = (await first!.service.services.store.jobs.getBackup(id))!;
      expect(job.status).toBe('completed');
      completed.push({ destination: job.destination, size: job.sizeBytes, stored: job.storedBytes });
    }
    for (const url of urls) after.push((await scrape(url)).samples);
  });
  afterAll(async () => {
    for (const h of instances) await h.stop();
    await pg?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('counts each job once across instances: created where requested, finished where recorded', () => {
    expect([delta(0, 'backup_jobs_created_total', { kind: 'backup' }), delta(1, 'backup_jobs_created_total', { kind: 'backup' })]).toEqual(taken);
    expect(total('backup_jobs_finished_total', { kind: 'backup', status: 'completed' })).toBe(12);
    expect(total('backup_jobs_finished_total')).toBe(12);
    expect(total('backup_job_duration_seconds_count', { kind: 'backup' })).toBe(12);
    expect(total('backup_job_queue_wait_seconds_count', { kind: 'backup' })).toBe(12);
    expect(total('backup_job_read_bytes_total', { kind: 'backup' })).toBe(completed.reduce((n, j) => n + j.size, 0));
    expect(total('backup_job_stored_bytes_total', { kind: 'backup' })).toBe(completed.reduce((n, j) => n + j.stored, 0));
    for (const samples of after) expect(sampleSum(samples, 'backup_instance_jobs_running')).toBe(0);
  });

  it('reads the same shared state on every instance', () => {
    for (const destination of ['local', 'cloud']) {
      const stored = completed.filter((j) => j.destination === destination).reduce((n, j) => n + j.stored, 0);
      const values = after.map((s) => sampleSum(s, 'backup_cluster_repository_stored_bytes', { destination }));
      expect(values).toEqual([stored, stored]);
      const last = after.map((s) => sampleSum(s, 'backup_cluster_last_successful_backup_timestamp_seconds', { destination }));
      expect(last[0]).toBeGreaterThan(0);
      expect(last[1]).toBe(last[0]);
    }
    for (const samples of after) {
      expect(sampleSum(samples, 'backup_cluster_jobs', { state: 'queued' })).toBe(0);
      expect(sampleSum(samples, 'backup_cluster_jobs', { state: 'running' })).toBe(0);
    }
  });
});

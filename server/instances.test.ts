import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from './auth/api-keys.ts';
import { startHarness, type Harness } from './testing/harness.ts';
import { startPostgres, type PostgresServer } from './testing/services/postgres.ts';
import { startRedis, type RedisServer } from './testing/services/redis.ts';

/**
 * The distributed shape for real: three server instances on one PostgreSQL, one Redis and one
 * shared data directory (repositories, token signing key), with the same master key file.
 */
describe('several instances on one PostgreSQL, Redis and shared storage', () => {
  let pg: PostgresServer;
  let redis: RedisServer;
  let dir: string;
  const instances: Harness[] = [];
  beforeAll(async () => {
    [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'instances-')));
    const env = {
      DATABASE_URL: await pg.createDatabase(),
      REDIS_URL: redis.url,
      JOB_CONCURRENCY: '2',
      BACKUP_BOOTSTRAP_API_KEY: 'key_instances',
      BACKUP_BOOTSTRAP_SECRET: 'the-same-on-every-instance',
    };
    // All at once, as a deployment starts: one migrates the schema (the others wait on its lock),
    // one records the secrets' fingerprints and makes the bootstrap key; all agree.
    instances.push(...(await Promise.all([0, 1, 2].map(() => startHarness(env, {}, dir)))));
  });
  afterAll(async () => {
    for (const h of instances) await h.stop();
    await redis?.cleanup();
    await pg?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs 90 backups of 10 accounts, submitted round-robin over 3 instances, each exactly once', async () => {
    const [first] = instances;
    const accounts = await Promise.all(Array.from({ length: 10 }, () => createApiKey(first!.service.services.store, { plan: 'business' })));
    const tokens = await Promise.all(accounts.map((a, i) => instances[i % 3]!.tokenFor(a)));
    for (const [i] of accounts.entries()) {
      const src = join(first!.root, `src${i}`);
      mkdirSync(src, { recursive: true });
      writeFileSync(join(src, 'a.txt'), `account ${i}\n`);
      writeFileSync(join(src, 'b.txt'), 'x'.repeat(1000 + i));
    }
    const submitted: Array<{ id: string; account: number }> = [];
    for (let n = 0; n < 90; n += 30) {
      const batch = await Promise.all(
        Array.from({ length: 30 }, (_, k) => {
          const i = (n + k) % 10;
          return instances[(n + k) % 3]!.request('/api/v1/backup', { method: 'POST', token: tokens[i]!, json: { source: join(first!.root, `src${i}`) } }).then((r) => {
            expect(r.status).toBe(202);
            return { id: r.body.data.id as string, account: i };
          });
        }),
      );
      submitted.push(...batch);
    }
    const started = Date.now();
    for (const { id } of submitted) expect(await instances[0]!.service.services.queue.waitSettled(id, 240_000)).toBe(true);
    console.log(`90 backups settled in ${Date.now() - started} ms`);
    const jobs = await Promise.all(submitted.map(({ id }) => first!.service.services.store.jobs.getBackup(id)));
    expect(jobs.map((j) => j?.status)).toEqual(submitted.map(() => 'completed'));
    // Exactly once: each account's repository holds one snapshot per backup of it, no more.
    for (const [i, account] of accounts.entries()) {
      const snapshots = readdirSync(join(dir, 'data', 'repositories', account.accountId, 'cloud', 'snapshots'));
      expect(snapshots.length).toBe(submitted.filter((s) => s.account === i).length);
    }
    expect(new Set(jobs.map((j) => j!.snapshotId)).size).toBe(90);
  }, 300_000);

  it('started together, agree on one schema, one key file and the bootstrap key', async () => {
    const tokens = await Promise.all(instances.map((h) => h.tokenFor({ apiKey: 'key_instances', secret: 'the-same-on-every-instance', accountId: '', plan: 'free_trial' })));
    // A token from any instance is good on every other.
    for (const [i, token] of tokens.entries()) expect((await instances[(i + 1) % 3]!.request('/api/v1/backup', { token })).status).toBe(200);
  });

  it('holds a free-plan account to exactly 100 requests an hour, 150 sent at once over two instances', async () => {
    const key = await createApiKey(instances[0]!.service.services.store, { plan: 'free_trial' });
    const token = await instances[0]!.tokenFor(key);
    const answers = await Promise.all(Array.from({ length: 150 }, (_, i) => instances[i % 2]!.request('/api/v1/backup', { token })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(100);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(50);
  });
});

// `npm run bench:instances`: the distributed shape against the embedded one, in one run.
//   1. Jobs: BENCH_JOBS (300) small backups of 20 accounts, submitted round-robin to 1 and to 2
//      instances (child processes on one PostgreSQL + Redis + shared DATA_DIR): jobs/s, and the
//      queue wait (started_at − created_at) p50/p99. BENCH_ROUNDS (3) interleaved rounds, medians.
//   2. Limits: a free-plan account fires 150 requests at once, split over 2 instances: how many
//      succeed (the free plan's hourly limit).
//   3. Per-request cost of the store: GET /api/v1/backup/{id}, SQLite vs PostgreSQL, one instance
//      each, autocannon BENCH_SECONDS (10) per run, BENCH_ROUNDS rounds, limits raised a million-fold.
//   4. Listing pages: BENCH_LISTING_ENTRIES (1,000,000) entries in one backup (appended and settled, as a
//      backup job does), pages of 100 by
//      prefix and cursor, p50/p99, SQLite vs PostgreSQL (the stores themselves, no HTTP).
// BENCH_PARTS (jobs,limits,get,listing) runs a subset. Prints a Markdown section and writes it as
// "## Instances" of docs/performance.md (BENCH_DOC) when every part ran.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { newId } from '../server/ids.ts';
import * as state from '../server/jobs/state.ts';
import { openPostgresStore } from '../server/store/postgres/index.ts';
import { openSqliteStore } from '../server/store/sqlite/index.ts';
import type { FileRecord, Store } from '../server/store/index.ts';
import { freePort } from '../server/testing/services/ports.ts';
import { startPostgres, type PostgresServer } from '../server/testing/services/postgres.ts';
import { startRedis, type RedisServer } from '../server/testing/services/redis.ts';
import { autocannon, machine, median, percentile, writeSection, type LoadResult } from './common.ts';
import { NODE_FLAGS } from './tools.ts';


const ROOT = join(import.meta.dirname, '..');
const SCRATCH = join(ROOT, '.bench', 'instances');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const JOBS = Number(process.env.BENCH_JOBS ?? 300);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ENTRIES = Number(process.env.BENCH_LISTING_ENTRIES ?? 1_000_000);
const ACCOUNTS = 20;
const PERFORMANCE = process.env.BENCH_DOC ?? join(ROOT, 'docs', 'performance.md');
const PARTS = new Set((process.env.BENCH_PARTS ?? 'jobs,limits,get,listing').split(','));
const KEY = 'key_bench_instances';
const SECRET = 'bench-instances-secret-0123456789';

/** Child mode: the real app as `npm start` builds it; `--raised` multiplies every limit a million-fold. */
async function serve(raised: boolean): Promise<void> {
  const { createApp } = await import('../server/app.ts');
  const { loadConfig } = await import('../server/config.ts');
  const { openRateLimitStore } = await import('../server/ratelimit/select.ts');
  const { createLogger } = await import('../server/http/logger.ts');
  const config = loadConfig();
  const logger = createLogger('warn');
  const inner = await openRateLimitStore(config.redisUrl, logger);
  const store = raised
    ? { hit: (k: string, l: number, w: number) => inner.hit(k, l * 1_000_000, w), refund: inner.refund.bind(inner), reset: inner.reset.bind(inner) }
    : inner;
  const service = await createApp(config, { logger, rateLimitStore: store });
  await service.listen();
  process.once('SIGTERM', () => service.close().then(() => process.exit(0), () => process.exit(1)));
}

interface Instance {
  base: string;
  child: ChildProcess;
}

async function startInstance(env: Record<string, string>, raised = false): Promise<Instance> {
  const port = await freePort();
  const child = spawn(process.execPath, [...NODE_FLAGS, join(ROOT, 'bench', 'instances.ts'), raised ? '--serve-raised' : '--serve'], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}/api/v1`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`instance exited ${child.exitCode}`);
    try {
      await fetch(`${base}/status`);
      return { base, child };
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error('instance did not start');
}

async function stop(i: Instance): Promise<void> {
  if (i.child.exitCode !== null) return;
  const exited = new Promise((r) => i.child.once('exit', r));
  i.child.kill('SIGTERM');
  await exited;
}

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.json() };
}

async function tokenFor(base: string, apiKey: string, secret: string): Promise<string> {
  const r = await json(`${base}/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: apiKey, secret }) });
  if (r.status !== 200) throw new Error(`token: ${r.status}`);
  return r.body.data.access_token as string;
}

/** Settings of one deployment: its own database and data directory, the shared Redis and master key file. */
async function deployment(pg: PostgresServer, redis: RedisServer, name: string): Promise<Record<string, string>> {
  const dir = join(SCRATCH, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'root'), { recursive: true });
  return {
    DATABASE_URL: await pg.createDatabase(),
    REDIS_URL: redis.url,
    DATA_DIR: join(dir, 'data'),
    MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
    BACKUP_ALLOWED_ROOTS: join(dir, 'root'),
    BACKUP_BOOTSTRAP_API_KEY: KEY,
    BACKUP_BOOTSTRAP_SECRET: SECRET,
    BACKUP_BOOTSTRAP_PLAN: 'business',
  };
}

/** Part 1: JOBS backups over `count` instances; jobs/s and queue wait. */
async function jobsRound(pg: PostgresServer, redis: RedisServer, count: number, round: number): Promise<{ jobsPerSecond: number; waitP50: number; waitP99: number }> {
  const env = await deployment(pg, redis, `jobs-${count}-${round}`);
  const instances: Instance[] = [];
  for (let i = 0; i < count; i++) instances.push(await startInstance(env));
  try {
    // Accounts: keys made through the keys command's code path, in the deployment's store.
    const { openStore } = await import('../server/store/index.ts');
    const { createApiKey } = await import('../server/auth/api-keys.ts');
    const store = await openStore({ dataDir: env.DATA_DIR!, databaseUrl: env.DATABASE_URL! });
    const keys = [];
    for (let a = 0; a < ACCOUNTS; a++) keys.push(await createApiKey(store, { plan: 'business' }));
    await store.close();
    const tokens = await Promise.all(keys.map((k, a) => tokenFor(instances[a % count]!.base, k.apiKey, k.secret)));
    for (let a = 0; a < ACCOUNTS; a++) {
      const src = join(env.BACKUP_ALLOWED_ROOTS!, `src${a}`);
      mkdirSync(src, { recursive: true });
      for (let f = 0; f < 5; f++) writeFileSync(join(src, `f${f}.txt`), `account ${a} file ${f}\n`.repeat(50));
    }
    const ids: string[] = [];
    for (let n = 0; n < JOBS; n += 30) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(30, JOBS - n) }, (_, k) => {
          const a = (n + k) % ACCOUNTS;
          return json(`${instances[(n + k) % count]!.base}/backup`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens[a]}` },
            body: JSON.stringify({ source: join(env.BACKUP_ALLOWED_ROOTS!, `src${a}`) }),
          });
        }),
      );
      for (const r of batch) {
        if (r.status !== 202) throw new Error(`submit: ${r.status} ${JSON.stringify(r.body)}`);
        ids.push(r.body.data.id as string);
      }
    }
    for (;;) {
      const s = await json(`${instances[0]!.base}/status`);
      if (s.body.data.jobs.queued + s.body.data.jobs.running === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const jobs = await Promise.all(ids.map((id, i) => json(`${instances[0]!.base}/backup/${id}`, { headers: { authorization: `Bearer ${tokens[i % ACCOUNTS]}` } })));
    const data = jobs.map((j) => j.body.data as { status: string; created_at: string; started_at: string; finished_at: string });
    const notDone = data.filter((d) => d.status !== 'completed').length;
    if (notDone) throw new Error(`${notDone} jobs did not complete`);
    const first = Math.min(...data.map((d) => Date.parse(d.created_at)));
    const last = Math.max(...data.map((d) => Date.parse(d.finished_at)));
    const waits = data.map((d) => Date.parse(d.started_at) - Date.parse(d.created_at));
    return { jobsPerSecond: JOBS / ((last - first) / 1000), waitP50: percentile(waits, 50), waitP99: percentile(waits, 99) };
  } finally {
    for (const i of instances) await stop(i);
  }
}

/** Part 2: 150 requests at once of a free-plan account over two instances. */
async function limitsOverTwo(pg: PostgresServer, redis: RedisServer): Promise<{ ok: number; limited: number }> {
  const env = await deployment(pg, redis, 'limits');
  const instances = [await startInstance(env), await startInstance(env)];
  try {
    const { openStore } = await import('../server/store/index.ts');
    const { createApiKey } = await import('../server/auth/api-keys.ts');
    const store = await openStore({ dataDir: env.DATA_DIR!, databaseUrl: env.DATABASE_URL! });
    const key = await createApiKey(store, { plan: 'free_trial' });
    await store.close();
    const token = await tokenFor(instances[0]!.base, key.apiKey, key.secret);
    const answers = await Promise.all(Array.from({ length: 150 }, (_, i) => fetch(`${instances[i % 2]!.base}/backup`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status)));
    return { ok: answers.filter((s) => s === 200).length, limited: answers.filter((s) => s === 429).length };
  } finally {
    for (const i of instances) await stop(i);
  }
}

/** Part 3: GET /backup/{id} throughput on each store. */
async function getBackupRates(pg: PostgresServer, redis: RedisServer): Promise<Map<string, LoadResult[]>> {
  const shapes: Array<{ label: string; env: Record<string, string> }> = [];
  const embedded = await deployment(pg, redis, 'get-sqlite');
  delete embedded.DATABASE_URL;
  delete embedded.REDIS_URL;
  shapes.push({ label: 'SQLite (embedded)', env: embedded });
  shapes.push({ label: 'PostgreSQL + Redis', env: await deployment(pg, redis, 'get-postgres') });
  const running: Array<{ label: string; instance: Instance; url: string; headers: Record<string, string> }> = [];
  try {
    for (const s of shapes) {
      const src = join(s.env.BACKUP_ALLOWED_ROOTS!, 'docs');
      mkdirSync(src, { recursive: true });
      for (let i = 0; i < 20; i++) writeFileSync(join(src, `f${i}.txt`), `file ${i}\n`.repeat(100));
      const instance = await startInstance(s.env, true);
      const token = await tokenFor(instance.base, KEY, SECRET);
      const headers = { authorization: `Bearer ${token}` };
      const made = await json(`${instance.base}/backup`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', prefer: 'wait=30' }, body: JSON.stringify({ source: src }) });
      if (made.body.data.status !== 'completed') throw new Error(`${s.label}: backup ${made.body.data.status}`);
      running.push({ label: s.label, instance, url: `${instance.base}/backup/${made.body.data.id}`, headers });
    }
    for (const r of running) await autocannon({ url: r.url, headers: r.headers, connections: 10, duration: 2 });
    const results = new Map<string, LoadResult[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const r of running.map((_, i) => running[(i + round) % running.length]!)) {
        const result = await autocannon({ url: r.url, headers: r.headers, connections: 10, duration: SECONDS });
        if (result.non2xx || result.errors) throw new Error(`${r.label}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        results.set(r.label, [...(results.get(r.label) ?? []), result]);
        process.stderr.write(`round ${round} GET /backup/{id} ${r.label}: ${Math.round(result.requests.average)} req/s\n`);
      }
    }
    return results;
  } finally {
    for (const r of running) await stop(r.instance);
  }
}

/** Part 4: pages of a listing of ENTRIES entries, on one store. */
async function listingPages(store: Store): Promise<{ p50: number; p99: number; append: number }> {
  const account = await store.accounts.createAccount('business');
  const id = newId('bkp');
  const job = (await store.jobs.insertBackup({ id, accountId: account.id, repository: `${account.id}/cloud`, source: '/x', destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true }, 100))!;
  await state.start(store, job, { owner: 'bench', leaseMs: 3_600_000, accountCap: 1 });
  const perDir = 1000;
  const started = performance.now();
  for (let at = 0; at < ENTRIES; at += 2000) {
    const batch: FileRecord[] = [];
    for (let i = at; i < Math.min(at + 2000, ENTRIES); i++) {
      batch.push({ path: Buffer.from(`home/user${Math.floor(i / perDir / 100)}/dir${Math.floor(i / perDir)}/file-${i % perDir}.txt`), type: 'file', sizeBytes: 1234, mode: 0o644, modifiedAt: '2026-01-01T00:00:00.000Z', sha256: 'a'.repeat(64), linkTarget: null });
    }
    await store.files.append(id, batch);
  }
  await store.files.settle(); // as a backup job does once its listing is whole
  const append = (performance.now() - started) / 1000;
  await state.complete(store, job, 'bench', { result: { snapshotId: 's', filesBackedUp: ENTRIES, sizeBytes: 0, storedBytes: 0 }, progress: job.progress, warnings: job.warnings });
  const times: number[] = [];
  const dirs = Math.max(1, Math.floor(ENTRIES / perDir));
  for (let p = 0; p < 100; p++) {
    // A page by a prefix, then the page its cursor leads to; and one of the whole listing from a cursor.
    const d = Math.floor(Math.random() * dirs);
    const prefix = Buffer.from(`home/user${Math.floor(d / 100)}/dir${d}/`);
    let t = performance.now();
    const first = await store.files.page(id, { prefix, limit: 100 });
    times.push(performance.now() - t);
    if (first.next !== null) {
      t = performance.now();
      await store.files.page(id, { prefix, limit: 100, after: first.next });
      times.push(performance.now() - t);
    }
    t = performance.now();
    await store.files.page(id, { limit: 100, after: Math.floor(Math.random() * ENTRIES) });
    times.push(performance.now() - t);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99), append };
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  rmSync(SCRATCH, { recursive: true, force: true });
  mkdirSync(SCRATCH, { recursive: true });
  const [pg, redis] = await Promise.all([startPostgres({ fsync: true }), startRedis()]);
  try {
    const jobRuns = new Map<number, Array<Awaited<ReturnType<typeof jobsRound>>>>();
    for (let round = 1; PARTS.has('jobs') && round <= ROUNDS; round++) {
      for (const count of round % 2 ? [1, 2] : [2, 1]) {
        const r = await jobsRound(pg, redis, count, round);
        jobRuns.set(count, [...(jobRuns.get(count) ?? []), r]);
        process.stderr.write(`round ${round}, ${count} instance(s): ${r.jobsPerSecond.toFixed(1)} jobs/s, wait p50 ${r.waitP50} ms, p99 ${r.waitP99} ms\n`);
      }
    }
    const limits = PARTS.has('limits') ? await limitsOverTwo(pg, redis) : null;
    if (limits) process.stderr.write(`150 requests of a free-plan account over 2 instances: ${limits.ok} succeeded, ${limits.limited} limited\n`);
    const rates = PARTS.has('get') ? await getBackupRates(pg, redis) : null;
    const listing: Array<{ label: string } & Awaited<ReturnType<typeof listingPages>>> = [];
    const sqliteDir = join(SCRATCH, 'listing-sqlite');
    for (const [label, open] of [
      ['SQLite', async () => openSqliteStore(sqliteDir)],
      ['PostgreSQL', async () => openPostgresStore(await pg.createDatabase())],
    ] as const) {
      if (!PARTS.has('listing')) break;
      const store = await open();
      try {
        const r = await listingPages(store);
        listing.push({ label, ...r });
        process.stderr.write(`listing of ${ENTRIES} entries, ${label}: appended in ${r.append.toFixed(1)} s, page p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms\n`);
      } finally {
        await store.close();
      }
    }
    if (!limits || !rates || listing.length < 2 || jobRuns.size < 2) return; // a subset: figures on stderr only

    const fig = (count: number) => {
      const rs = jobRuns.get(count)!;
      return { jps: median(rs.map((r) => r.jobsPerSecond)), p50: median(rs.map((r) => r.waitP50)), p99: median(rs.map((r) => r.waitP99)), all: rs.map((r) => r.jobsPerSecond.toFixed(1)) };
    };
    const one = fig(1);
    const two = fig(2);
    const rate = (label: string) => median(rates.get(label)!.map((r) => r.requests.average));
    const sqliteRate = rate('SQLite (embedded)');
    const pgRate = rate('PostgreSQL + Redis');
    const section = [
      '## Instances',
      '',
      `Measured by \`npm run bench:instances\` (bench/instances.ts) on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: ${machine()}.`,
      `Instances are child processes (\`createApp()\` as \`npm start\` builds it, JOB_CONCURRENCY 2 each) on one PostgreSQL 15 (fsync on), one Redis 7 and one`,
      `shared DATA_DIR, all on this machine. Other work on the machine: 1-minute load average ${loadBefore.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end.`,
      '',
      `### ${JOBS} small backups of ${ACCOUNTS} accounts, submitted round-robin (${ROUNDS} interleaved rounds, medians)`,
      '',
      `| instances | jobs/s | queue wait p50 ms | queue wait p99 ms | jobs/s of the ${ROUNDS} runs |`,
      '|---:|---:|---:|---:|---|',
      `| 1 | ${one.jps.toFixed(1)} | ${one.p50} | ${one.p99} | ${one.all.join(', ')} |`,
      `| 2 | ${two.jps.toFixed(1)} | ${two.p50} | ${two.p99} | ${two.all.join(', ')} |`,
      '',
      `- 2 instances ÷ 1: **${(two.jps / one.jps).toFixed(2)}×** the jobs/s (both share the machine's ${machine().split(' ')[0]} cores). Every job completed exactly once.`,
      `- A free-plan account's 150 requests at once over 2 instances: **${limits.ok} succeeded**, ${limits.limited} answered 429 (exactly the free plan's hourly limit; counters in Redis).`,
      '',
      `### GET /api/v1/backup/{id} (autocannon, 10 connections, ${SECONDS} s per run, ${ROUNDS} rounds, medians)`,
      '',
      '| store | req/s | p99 ms |',
      '|---|---:|---:|',
      ...[...rates.entries()].map(([label, rs]) => `| ${label} | ${Math.round(median(rs.map((r) => r.requests.average)))} | ${median(rs.map((r) => r.latency.p99))} |`),
      '',
      `- PostgreSQL ÷ SQLite: **${(pgRate / sqliteRate).toFixed(2)}×** the requests per second (the database round trips per request: token's key, the job; and Redis for the limit).`,
      '',
      `### Listing pages over ${ENTRIES.toLocaleString('en')} entries (100 a page: by prefix, its next page, and from a cursor; the stores without HTTP)`,
      '',
      '| store | append (s) | page p50 ms | page p99 ms |',
      '|---|---:|---:|---:|',
      ...listing.map((l) => `| ${l.label} | ${l.append.toFixed(1)} | ${l.p50.toFixed(1)} | ${l.p99.toFixed(1)} |`),
      '',
    ].join('\n');
    process.stdout.write(`${section}\n`);
    writeSection(PERFORMANCE, '## Instances', section);
  } finally {
    await redis.cleanup();
    await pg.stop();
  }
}

const mode = process.argv[2];
const run = mode === '--serve' ? serve(false) : mode === '--serve-raised' ? serve(true) : main();
run.catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

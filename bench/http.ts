// `npm run bench:http`: autocannon against GET /api/v1/backup/{id} (a real completed job) and
// GET /api/tools/ip-info on the real app as `npm start` runs it (response validation and
// metrics on), with metrics off (METRICS_PORT=0), with validation off, on a bare Express route
// returning the same JSON (bench/http-bare.ts), and on the app serving HTTPS itself
// (validation on, a certificate from a throwaway CA; keep-alive connections, so TLS costs its
// record encryption and one handshake per connection). Besides requests per second, each run
// reports the CPU time the server process spent per request (user + system, from /proc): on a
// shared machine that figure moves less with other load than throughput does. Three rounds, interleaved so that drift of
// the machine hits every configuration alike; the median of the three is reported. Prints a
// Markdown table and writes it as the "## HTTP" section of docs/performance.md, leaving every
// other section of that file as it is.
//   BENCH_SECONDS (default 10) per run, BENCH_CONNECTIONS (default 10), BENCH_ROUNDS (default 3),
//   BENCH_DOC (default docs/performance.md), BENCH_ROUTES (only the routes whose name contains it,
//   e.g. `backup`; all by default).
//
// The app runs in a child process (`node bench/http.ts --serve`), built by createApp() from the
// same environment as `npm start`, with every rate limit raised a million-fold rather than
// switched off, so that the limiter's bookkeeping and headers stay in the measured path.
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { RateLimitStore } from '../server/ratelimit/store.ts';
import { createCa, issueCertificate } from '../scripts/dev-cert/pki.ts';
import { freePort } from '../server/testing/services/ports.ts';
import { NODE_FLAGS } from './tools.ts';
import { autocannon, cpuMicros, machine, median, writeSection, type LoadResult as Result } from './common.ts';


const ROOT = join(import.meta.dirname, '..');
const SCRATCH = join(ROOT, '.bench', 'http');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const KEY = 'key_bench_http';
const SECRET = 'bench-http-secret-0123456789';
const PERFORMANCE = process.env.BENCH_DOC ?? join(ROOT, 'docs', 'performance.md');
const ROUTE_FILTER = process.env.BENCH_ROUTES ?? '';

/** Child mode: the real app, limits raised. */
async function serve(): Promise<void> {
  (await import('../server/compile-cache.ts')).useCompileCache(); // as server/main.ts does
  const { createApp } = await import('../server/app.ts');
  const { loadConfig } = await import('../server/config.ts');
  const { MemoryRateLimitStore } = await import('../server/ratelimit/store.ts');
  const inner = new MemoryRateLimitStore();
  const raised: RateLimitStore = {
    hit: (key, limit, windowMs) => inner.hit(key, limit * 1_000_000, windowMs),
    hitNow: (key, limit, windowMs) => inner.hitNow(key, limit * 1_000_000, windowMs),
    refund: (key, resetAt) => inner.refund(key, resetAt),
    reset: (key) => inner.reset(key),
  };
  const service = await createApp(loadConfig(), { rateLimitStore: raised });
  await service.listen();
  await service.listenMetrics();
  process.once('SIGTERM', () => {
    service.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

function start(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [...NODE_FLAGS, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** GET over TLS, trusting `ca` (fetch cannot be given a CA). */
function httpsGet(url: string, ca: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    httpsRequest(url, { ca, headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    })
      .on('error', reject)
      .end();
  });
}

async function waitReady(url: string, ca?: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    try {
      if (ca) await httpsGet(url, ca);
      else await fetch(url);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`not ready: ${url}`);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

type Run = Result & { cpuPerRequest: number };

async function load(url: string, headers: Record<string, string>, duration: number, pid: number): Promise<Run> {
  const before = cpuMicros(pid);
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration });
  if (r.non2xx || r.errors || r.timeouts) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  return { ...r, cpuPerRequest: (cpuMicros(pid) - before) / Math.max(1, r.requests.total) };
}

async function json(url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.json() };
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  rmSync(SCRATCH, { recursive: true, force: true });
  const root = join(SCRATCH, 'root');
  mkdirSync(join(root, 'docs'), { recursive: true });
  for (let i = 0; i < 20; i++) writeFileSync(join(root, 'docs', `f${i}.txt`), `file ${i}\n`.repeat(100));
  const env = {
    HOST: '127.0.0.1',
    DATA_DIR: join(SCRATCH, 'data'),
    MASTER_KEY_FILE: join(SCRATCH, 'keys', 'master.key'),
    BACKUP_ALLOWED_ROOTS: root,
    BACKUP_BOOTSTRAP_API_KEY: KEY,
    BACKUP_BOOTSTRAP_SECRET: SECRET,
    BACKUP_BOOTSTRAP_PLAN: 'business',
    LOG_LEVEL: 'info',
  };
  const ports = { setup: await freePort(), on: await freePort(), metricsOff: await freePort(), off: await freePort(), bare: await freePort(), tls: await freePort() };
  // Every server but the metrics-off one serves /metrics, each on its own port.
  const metricsPort = async (): Promise<string> => String(await freePort());
  const onMetrics = await metricsPort();
  const pki = join(SCRATCH, 'pki');
  const ca = createCa(pki);
  const cert = issueCertificate({ ca, dir: pki, name: 'localhost', altNames: ['IP:127.0.0.1'] });
  const caPem = readFileSync(ca.cert, 'utf8');
  const self = join(ROOT, 'bench', 'http.ts');
  const children: ChildProcess[] = [];
  try {
    // A setup server makes the completed job and stops; the measured servers then start afresh on
    // copies of its data (one server per data directory; the master key file is shared), so all
    // answer the same job with the same token, and none carries the heap and threads of a backup.
    const setup = start([self, '--serve'], { ...env, PORT: String(ports.setup), VALIDATE_RESPONSES: 'true', METRICS_PORT: '0' });
    children.push(setup);
    await waitReady(`http://127.0.0.1:${ports.setup}/api/v1/status`);
    const api = `http://127.0.0.1:${ports.setup}/api/v1`;
    const token = await json(`${api}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: KEY, secret: SECRET }),
    });
    const auth = { authorization: `Bearer ${token.body.data.access_token as string}` };
    const created = await json(`${api}/backup`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', prefer: 'wait=30' },
      body: JSON.stringify({ source: join(root, 'docs'), destination: 'local' }),
    });
    const id = created.body.data.id as string;
    const job = await json(`${api}/backup/${id}`, { headers: auth });
    if (job.body.data.status !== 'completed') throw new Error(`backup ${id} is ${job.body.data.status}, not completed`);
    const ipInfo = await json(`http://127.0.0.1:${ports.setup}/api/tools/ip-info`);
    writeFileSync(join(SCRATCH, 'bodies.json'), JSON.stringify({ backup: job.body, ipInfo: ipInfo.body }));
    await stop(children.pop()!);

    const copy = (name: string): string => {
      cpSync(env.DATA_DIR, join(SCRATCH, name), { recursive: true });
      return join(SCRATCH, name);
    };
    children.push(start([self, '--serve'], { ...env, DATA_DIR: copy('data-on'), PORT: String(ports.on), VALIDATE_RESPONSES: 'true', METRICS_PORT: onMetrics }));
    children.push(start([self, '--serve'], { ...env, DATA_DIR: copy('data-metrics-off'), PORT: String(ports.metricsOff), VALIDATE_RESPONSES: 'true', METRICS_PORT: '0' }));
    children.push(start([self, '--serve'], { ...env, DATA_DIR: copy('data-off'), PORT: String(ports.off), VALIDATE_RESPONSES: 'false', METRICS_PORT: await metricsPort() }));
    children.push(start([join(ROOT, 'bench', 'http-bare.ts')], { PORT: String(ports.bare), BARE_BODIES: join(SCRATCH, 'bodies.json') }));
    children.push(start([self, '--serve'], { ...env, DATA_DIR: copy('data-tls'), PORT: String(ports.tls), VALIDATE_RESPONSES: 'true', TLS_CERT_FILE: cert.cert, TLS_KEY_FILE: cert.key, METRICS_PORT: await metricsPort() }));
    await waitReady(`http://127.0.0.1:${ports.on}/api/v1/status`);
    await waitReady(`http://127.0.0.1:${ports.metricsOff}/api/v1/status`);
    await waitReady(`http://127.0.0.1:${ports.off}/api/v1/status`);
    await waitReady(`http://127.0.0.1:${ports.bare}/api/tools/ip-info`);
    await waitReady(`https://127.0.0.1:${ports.tls}/api/v1/status`, caPem);

    const [onChild, metricsOffChild, offChild, bareChild, tlsChild] = children.map((c) => c.pid!);
    const configs = [
      { label: 'validation on', origin: `http://127.0.0.1:${ports.on}`, pid: onChild! },
      { label: 'metrics off', origin: `http://127.0.0.1:${ports.metricsOff}`, pid: metricsOffChild! },
      { label: 'validation off', origin: `http://127.0.0.1:${ports.off}`, pid: offChild! },
      { label: 'bare Express', origin: `http://127.0.0.1:${ports.bare}`, pid: bareChild! },
      { label: 'HTTPS, validation on', origin: `https://127.0.0.1:${ports.tls}`, pid: tlsChild! },
    ];
    const allRoutes = [
      { name: 'GET /api/v1/backup/{id}', path: `/api/v1/backup/${id}`, headers: auth },
      { name: 'GET /api/tools/ip-info', path: '/api/tools/ip-info', headers: {} },
    ];
    const routes = allRoutes.filter((r) => r.name.includes(ROUTE_FILTER));
    // Every configuration answers the same data.
    for (const c of configs) {
      const secure = c.origin.startsWith('https:');
      const b = secure ? await httpsGet(c.origin + allRoutes[0]!.path, caPem, auth) : await json(c.origin + allRoutes[0]!.path, { headers: auth });
      const i = secure ? await httpsGet(c.origin + allRoutes[1]!.path, caPem) : await json(c.origin + allRoutes[1]!.path);
      if (JSON.stringify(b.body.data) !== JSON.stringify(job.body.data)) throw new Error(`${c.label}: different backup job`);
      // user_agent echoes the client: fetch says "node", node:https says nothing.
      const sameIp = (d: Record<string, unknown>) => JSON.stringify({ ...d, user_agent: undefined });
      if (sameIp(i.body.data) !== sameIp(ipInfo.body.data)) throw new Error(`${c.label}: different ip-info`);
    }
    for (const c of configs) for (const r of routes) await load(c.origin + r.path, r.headers, 2, c.pid); // warm-up

    const runs = new Map<string, Run[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const r of routes) {
        // Each round starts with another configuration, so none always runs first.
        for (const c of configs.map((_, i) => configs[(i + round) % configs.length]!)) {
          const result = await load(c.origin + r.path, r.headers, SECONDS, c.pid);
          const key = `${r.name}|${c.label}`;
          runs.set(key, [...(runs.get(key) ?? []), result]);
          process.stderr.write(`round ${round} ${r.name} ${c.label}: ${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms, ${Math.round(result.cpuPerRequest)} µs CPU/request\n`);
        }
      }
    }

    // The instrumented server counted what it served (metrics were really on).
    const scraped = await (await fetch(`http://127.0.0.1:${onMetrics}/metrics`)).text();
    if (!/backup_http_requests_total\{operation="getBackup",status_class="2xx"\} [1-9]/.test(scraped)) throw new Error('the metrics-on server counted no getBackup');

    const figure = (route: string, label: string) => {
      const rs = runs.get(`${route}|${label}`)!;
      return { rps: median(rs.map((r) => r.requests.average)), p99: median(rs.map((r) => r.latency.p99)), cpu: median(rs.map((r) => r.cpuPerRequest)), all: rs.map((r) => Math.round(r.requests.average)) };
    };
    const rows = [`| route | configuration | req/s (median) | p99 ms (median) | server CPU µs/request (median) | req/s of the ${ROUNDS} runs |`, '|---|---|---:|---:|---:|---|'];
    const ratios: string[] = [];
    for (const r of routes) {
      for (const c of configs) {
        const f = figure(r.name, c.label);
        // autocannon measures latency in whole milliseconds.
        rows.push(`| ${r.name} | ${c.label} | ${Math.round(f.rps)} | ${f.p99 === 0 ? '< 1' : f.p99} | ${Math.round(f.cpu)} | ${f.all.join(', ')} |`);
      }
      const on = figure(r.name, 'validation on');
      const metricsOff = figure(r.name, 'metrics off');
      const off = figure(r.name, 'validation off');
      const bare = figure(r.name, 'bare Express');
      ratios.push(
        `- ${r.name}: response validation overhead (throughput off ÷ on) **${(off.rps / on.rps).toFixed(2)}×**, ` +
          `p99 on ÷ off ${(on.p99 / Math.max(off.p99, 1)).toFixed(2)}×; the full stack runs at ${((on.rps / bare.rps) * 100).toFixed(0)} % ` +
          `of the bare route with validation on, ${((off.rps / bare.rps) * 100).toFixed(0)} % with it off; ` +
          `with metrics on it serves **${((on.rps / metricsOff.rps) * 100).toFixed(1)} %** of the requests per second it serves with metrics off (goal: at least 95 %). ` +
          `In server CPU per request (bare ÷ full stack, the share of bare Express's throughput the stack would reach with a core to itself): ` +
          `**${((bare.cpu / on.cpu) * 100).toFixed(0)} %** with validation on (goal: at least 40 %), metrics off ÷ on **${((metricsOff.cpu / on.cpu) * 100).toFixed(1)} %**.`,
      );
      const tls = figure(r.name, 'HTTPS, validation on');
      ratios.push(
        `- ${r.name} over HTTPS: throughput **${((tls.rps / on.rps) * 100).toFixed(0)} %** of plain HTTP (HTTPS ÷ plain, validation on in both), ` +
          `p99 ${tls.p99} ms vs ${on.p99} ms (plain ÷ HTTPS **${((Math.max(on.p99, 1) / Math.max(tls.p99, 1)) * 100).toFixed(0)} %**; goal for both: at least 85 %).`,
      );
    }
    const loadAfter = loadavg()[0]!;
    const section = [
      '## HTTP',
      '',
      `Measured by \`npm run bench:http\` (bench/http.ts) on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: ${machine()}.`,
      `autocannon, ${CONNECTIONS} connections, ${SECONDS} s per run after a 2 s warm-up, ${ROUNDS} interleaved rounds, median reported;`,
      'client and server share the machine. The app is built by `createApp()` as `npm start` builds it (request validation,',
      'bearer auth, rate limiting with every limit raised a million-fold, request ids, info-level pino logs to a discarded',
      'stdout, envelope, Prometheus metrics on their own port); "validation on/off" is `VALIDATE_RESPONSES`; "metrics off" is',
      '`METRICS_PORT=0` with validation on (no HTTP instrumentation, no collection). The bare route is Express 5 returning the same JSON.',
      '"HTTPS" is the same app serving TLS itself (TLS 1.3, an EC P-256 certificate from a throwaway CA); autocannon keeps its',
      'connections alive, so each pays one handshake and then the record encryption of every request and answer.',
      `Other work on the machine: 1-minute load average ${loadBefore.toFixed(1)} at the start, ${loadAfter.toFixed(1)} at the end (the benchmark itself keeps both cores busy, about 2).`,
      '',
      ...rows,
      '',
      ...ratios,
      '',
    ].join('\n');
    process.stdout.write(`${section}\n`);
    writeSection(PERFORMANCE, '## HTTP', section);
  } finally {
    for (const child of children) await stop(child);
  }
}

if (process.argv.includes('--serve')) {
  serve().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
} else {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}

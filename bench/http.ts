// `npm run bench:http`: autocannon against GET /api/v1/backup/{id} (a real completed job) and
// GET /api/tools/ip-info on the real app as `npm start` runs it (response validation and
// metrics on), with metrics off (METRICS_PORT=0), with validation off, on a bare Express route
// returning the same JSON (bench/http-bare.ts), and on the app serving HTTPS itself
// (validation on, a certificate from a throwaway CA; keep-alive connections, so TLS costs its
// record encryption and one handshake per connection). Besides requests per second, each run
// reports the CPU time the server process spent per request (user + system, from /proc): on a
// shared machine that figure moves less with other load than throughput does. Every round starts
// a fresh server process per configuration (warmed up, then measured, then stopped), and the runs are
// interleaved so that drift of the machine hits every configuration alike; each goal share is the
// median of the per-round shares, so of as many pairs of processes as there are rounds. Prints a
// Markdown table and writes it as the "## HTTP" section of docs/performance.md, leaving every
// other section of that file as it is.
//   BENCH_SECONDS (default 5) per run, BENCH_CONNECTIONS (default 10), BENCH_ROUNDS (default 5),
//   BENCH_WARMUP (default 2: seconds of load per route on each fresh server before its round),
//   BENCH_DOC (default docs/performance.md), BENCH_ROUTES (only the routes whose name contains it,
//   e.g. `backup`; all by default), BENCH_AGAINST (another checkout, say main: its servers, run with its own `npm start` flags, of the
//   configurations "validation on", "metrics off" and "HTTPS" join every round, side by side),
//   BENCH_PROFILE (a directory: each measured server writes a CPU profile there, `--cpu-prof`),
//   BENCH_SHARED_CORES=1 (autocannon and the servers share every core; by default each has cores
//   of its own, see common.ts, CORES).
//
// The app runs in a child process (`node bench/http.ts --serve`), built by createApp() from the
// same environment as `npm start`, with every rate limit raised a million-fold rather than
// switched off, so that the limiter's bookkeeping and headers stay in the measured path.
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { basename, join } from 'node:path';
import type { RateLimitStore } from '../server/ratelimit/store.ts';
import { createCa, issueCertificate } from '../scripts/dev-cert/pki.ts';
import { freePort } from '../server/testing/services/ports.ts';
import { NODE_FLAGS, nodeFlags } from './tools.ts';
import { autocannon, coresLine, cpuMicros, machine, median, onServiceCores, pinLoad, writeSection, type LoadResult as Result } from './common.ts';


const ROOT = join(import.meta.dirname, '..');
const SCRATCH = join(ROOT, '.bench', 'http');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
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

const PROFILE = process.env.BENCH_PROFILE;
const AGAINST = process.env.BENCH_AGAINST;

/** A server process, with the V8 flags of the checkout it is started from (`flags`). */
function start(args: string[], env: Record<string, string>, profile?: string, flags = NODE_FLAGS): ChildProcess {
  const prof = PROFILE && profile ? ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE, profile)}`] : [];
  const [file, ...rest] = onServiceCores([process.execPath, ...flags, ...prof, ...args]);
  return spawn(file!, rest, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** GET over TLS, trusting `ca` (fetch cannot be given a CA). */
function httpsGet(url: string, ca: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any; cipher: string }> {
  return new Promise((resolve, reject) => {
    httpsRequest(url, { ca, headers, agent: false }, (res) => {
      const socket = res.socket as TLSSocket;
      const cipher = `${socket.getProtocol() ?? '?'} ${socket.getCipher().standardName}, ${(socket.getEphemeralKeyInfo() as { name?: string } | null)?.name ?? '?'}`;
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), cipher }));
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

type Run = Result & { cpuPerRequest: number; clientCpuPerRequest: number };

async function load(url: string, headers: Record<string, string>, duration: number, pid: number): Promise<Run> {
  const before = cpuMicros(pid);
  const client = process.cpuUsage();
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration });
  const used = process.cpuUsage(client);
  if (r.non2xx || r.errors || r.timeouts) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  const n = Math.max(1, r.requests.total);
  return { ...r, cpuPerRequest: (cpuMicros(pid) - before) / n, clientCpuPerRequest: (used.user + used.system) / n };
}

async function json(url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.json() };
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  pinLoad();
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
  const ports = { setup: await freePort(), bare: await freePort() };
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

    // One data directory per configuration, copied once: each round's server of that configuration
    // starts on it after the previous one has stopped.
    const dataDirs = new Map<string, string>();
    const copy = (name: string): string => {
      if (!dataDirs.has(name)) {
        cpSync(env.DATA_DIR, join(SCRATCH, name), { recursive: true });
        dataDirs.set(name, join(SCRATCH, name));
      }
      return dataDirs.get(name)!;
    };
    type Config = { label: string; origin: string; pid: number };
    const against = AGAINST ? ` @${basename(AGAINST)}` : '';
    const allRoutes = [
      { name: 'GET /api/v1/backup/{id}', path: `/api/v1/backup/${id}`, headers: auth },
      { name: 'GET /api/tools/ip-info', path: '/api/tools/ip-info', headers: {} },
    ];
    const routes = allRoutes.filter((r) => r.name.includes(ROUTE_FILTER));
    let negotiated = '';

    /** A fresh server process for every configuration, ready, checked to answer the same data and warmed up. */
    const startServers = async (round: number): Promise<Config[]> => {
      const configs: Config[] = [];
      const serveFrom = async (label: string, checkout: string, tag: string, extra: Record<string, string>, metrics: string | undefined, tls: boolean): Promise<void> => {
        const port = await freePort();
        const child = start([join(checkout, 'bench', 'http.ts'), '--serve'], { ...env, DATA_DIR: copy(`data-${tag}`), PORT: String(port), METRICS_PORT: metrics ?? String(await freePort()), ...extra, ...(tls ? { TLS_CERT_FILE: cert.cert, TLS_KEY_FILE: cert.key } : {}) }, `${tag}-${round}`, nodeFlags(checkout));
        children.push(child);
        configs.push({ label, origin: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`, pid: child.pid! });
      };
      await serveFrom('validation on', ROOT, 'on', { VALIDATE_RESPONSES: 'true' }, onMetrics, false);
      await serveFrom('metrics off', ROOT, 'metrics-off', { VALIDATE_RESPONSES: 'true' }, '0', false);
      await serveFrom('validation off', ROOT, 'off', { VALIDATE_RESPONSES: 'false' }, undefined, false);
      const barePort = await freePort();
      const bare = start([join(ROOT, 'bench', 'http-bare.ts')], { PORT: String(barePort), BARE_BODIES: join(SCRATCH, 'bodies.json') }, `bare-${round}`);
      children.push(bare);
      configs.push({ label: 'bare Express', origin: `http://127.0.0.1:${barePort}`, pid: bare.pid! });
      await serveFrom('HTTPS, validation on', ROOT, 'tls', { VALIDATE_RESPONSES: 'true' }, undefined, true);
      // The same three configurations served by another checkout, side by side in the same rounds.
      if (AGAINST) {
        await serveFrom(`validation on${against}`, AGAINST, 'on-against', { VALIDATE_RESPONSES: 'true' }, undefined, false);
        await serveFrom(`metrics off${against}`, AGAINST, 'metrics-off-against', { VALIDATE_RESPONSES: 'true' }, '0', false);
        await serveFrom(`HTTPS, validation on${against}`, AGAINST, 'tls-against', { VALIDATE_RESPONSES: 'true' }, undefined, true);
      }
      for (const c of configs) {
        if (c.label === 'bare Express') await waitReady(`${c.origin}/api/tools/ip-info`);
        else await waitReady(`${c.origin}/api/v1/status`, c.origin.startsWith('https:') ? caPem : undefined);
      }
      // Every configuration answers the same data.
      for (const c of configs) {
        const secure = c.origin.startsWith('https:');
        const b = secure ? await httpsGet(c.origin + allRoutes[0]!.path, caPem, auth) : await json(c.origin + allRoutes[0]!.path, { headers: auth });
        if (secure) negotiated = (b as unknown as { cipher: string }).cipher;
        const i = secure ? await httpsGet(c.origin + allRoutes[1]!.path, caPem) : await json(c.origin + allRoutes[1]!.path);
        if (JSON.stringify(b.body.data) !== JSON.stringify(job.body.data)) throw new Error(`${c.label}: different backup job`);
        // user_agent echoes the client: fetch says "node", node:https says nothing.
        const sameIp = (d: Record<string, unknown>) => JSON.stringify({ ...d, user_agent: undefined });
        if (sameIp(i.body.data) !== sameIp(ipInfo.body.data)) throw new Error(`${c.label}: different ip-info`);
      }
      for (const c of configs) for (const r of routes) await load(c.origin + r.path, r.headers, WARMUP, c.pid);
      return configs;
    };

    // Each round starts a fresh server process for every configuration and stops them all at its
    // end: a process keeps its own pace (how V8 optimised its code as it warmed up, how its young
    // generation happens to fill), so a share read from one pair of processes is that pair's luck;
    // the median over the rounds is the median over as many process pairs. The runs whose shares are
    // goals come one after another (metrics off, on, HTTPS), so each share compares two runs seconds
    // apart; every other round runs the order backwards, so neither of a pair always runs first and a
    // drift of the machine's load cancels out.
    const labels = ['bare Express', 'validation off', 'metrics off', 'validation on', 'HTTPS, validation on'];
    if (AGAINST) labels.push(...['HTTPS, validation on', 'validation on', 'metrics off'].map((l) => `${l}${against}`));
    const runs = new Map<string, Run[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      const configs = await startServers(round);
      const order = labels.map((label) => configs.find((c) => c.label === label)!);
      for (const r of routes) {
        for (const c of round % 2 === 1 ? order : [...order].reverse()) {
          const result = await load(c.origin + r.path, r.headers, SECONDS, c.pid);
          const key = `${r.name}|${c.label}`;
          runs.set(key, [...(runs.get(key) ?? []), result]);
          process.stderr.write(`round ${round} ${r.name} ${c.label} (pid ${c.pid}): ${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms, ${Math.round(result.cpuPerRequest)} µs CPU/request (client ${Math.round(result.clientCpuPerRequest)} µs)\n`);
        }
      }
      // The instrumented server counted what it served (metrics were really on).
      const scraped = await (await fetch(`http://127.0.0.1:${onMetrics}/metrics`)).text();
      if (routes.some((r) => r.name.includes('backup')) && !/backup_http_requests_total\{operation="getBackup",status_class="2xx"\} [1-9]/.test(scraped)) throw new Error('the metrics-on server counted no getBackup');
      for (const child of children.splice(0)) await stop(child);
    }
    const configs = ['validation on', 'metrics off', 'validation off', 'bare Express', 'HTTPS, validation on', ...(AGAINST ? ['validation on', 'metrics off', 'HTTPS, validation on'].map((l) => `${l}${against}`) : [])].map((label) => ({ label }));

    const figure = (route: string, label: string) => {
      const rs = runs.get(`${route}|${label}`)!;
      return {
        rps: median(rs.map((r) => r.requests.average)),
        p99: median(rs.map((r) => r.latency.p99)),
        cpu: median(rs.map((r) => r.cpuPerRequest)),
        clientCpu: median(rs.map((r) => r.clientCpuPerRequest)),
        all: rs.map((r) => Math.round(r.requests.average)),
      };
    };
    // a ÷ b within each round (the two ran seconds to minutes apart, under the same other load, each
    // in that round's own process): median [min–max] over the rounds, in per cent.
    const shares = (route: string, a: string, b: string, of: (r: Run) => number): number[] => {
      const as = runs.get(`${route}|${a}`)!;
      const bs = runs.get(`${route}|${b}`)!;
      return as.map((r, i) => (of(r) / of(bs[i]!)) * 100);
    };
    const paired = (route: string, a: string, b: string, of: (r: Run) => number, goal = false, digits = 1): string => {
      const xs = shares(route, a, b, of);
      const m = `${median(xs).toFixed(digits)} %`;
      return `${goal ? `**${m}**` : m} [${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}]`;
    };
    const rps = (r: Run) => r.requests.average;
    const inverseCpu = (r: Run) => 1 / r.cpuPerRequest;
    const rows = [`| route | configuration | req/s (median) | p99 ms (median) | server CPU µs/request (median) | client CPU µs/request (median) | req/s of the ${ROUNDS} runs (one process each) |`, '|---|---|---:|---:|---:|---:|---|'];
    const ratios: string[] = [];
    for (const r of routes) {
      for (const c of configs) {
        const f = figure(r.name, c.label);
        // autocannon measures latency in whole milliseconds.
        rows.push(`| ${r.name} | ${c.label} | ${Math.round(f.rps)} | ${f.p99 === 0 ? '< 1' : f.p99} | ${Math.round(f.cpu)} | ${Math.round(f.clientCpu)} | ${f.all.join(', ')} |`);
      }
      const on = figure(r.name, 'validation on');
      const off = figure(r.name, 'validation off');
      const tls = figure(r.name, 'HTTPS, validation on');
      ratios.push(
        `- ${r.name}, the goal shares (each round's two runs side by side, each run on that round's own server process; median [min–max] of the ${ROUNDS} rounds, ` +
          `so of ${ROUNDS} pairs of processes): the full stack ÷ bare Express ${paired(r.name, 'validation on', 'bare Express', inverseCpu, true, 0)} in server CPU per request ` +
          `(the share of bare Express's throughput the stack would reach with a core to itself; goal: at least 40 %), ${paired(r.name, 'validation on', 'bare Express', rps, false, 0)} of the requests per second; ` +
          `metrics on ÷ off ${paired(r.name, 'validation on', 'metrics off', rps, true)} of the requests per second (goal: at least 95 %), ${paired(r.name, 'validation on', 'metrics off', inverseCpu)} in server CPU per request; ` +
          `HTTPS ÷ plain (validation on in both) ${paired(r.name, 'HTTPS, validation on', 'validation on', rps, true)} of the requests per second (goal: at least 85 %), ${paired(r.name, 'HTTPS, validation on', 'validation on', inverseCpu)} in server CPU per request.`,
      );
      ratios.push(
        `- ${r.name}: response validation overhead (throughput off ÷ on, round by round) ${paired(r.name, 'validation off', 'validation on', rps)}, ` +
          `p99 on ÷ off ${(on.p99 / Math.max(off.p99, 1)).toFixed(2)}× (medians); the full stack with validation off ÷ bare Express ${paired(r.name, 'validation off', 'bare Express', inverseCpu, false, 0)} in server CPU per request; ` +
          `over HTTPS p99 ${tls.p99} ms vs ${on.p99} ms plain (medians; plain ÷ HTTPS **${((Math.max(on.p99, 1) / Math.max(tls.p99, 1)) * 100).toFixed(0)} %**, goal: at least 85 %).`,
      );
      if (AGAINST) {
        const main = (label: string) => `${label}${against}`;
        ratios.push(
          `- ${r.name}, the other checkout (${AGAINST}) in the same rounds: HTTPS ÷ plain ${paired(r.name, main('HTTPS, validation on'), main('validation on'), rps)} of the requests per second, ` +
            `${paired(r.name, main('HTTPS, validation on'), main('validation on'), inverseCpu)} in CPU; metrics on ÷ off ${paired(r.name, main('validation on'), main('metrics off'), rps)}, ` +
            `${paired(r.name, main('validation on'), main('metrics off'), inverseCpu)} in CPU; server CPU per request of this checkout ÷ the other's: ` +
            ['validation on', 'metrics off', 'HTTPS, validation on'].map((l) => `${l} ${paired(r.name, l, main(l), (x) => x.cpuPerRequest)}`).join(', ') +
            '.',
        );
      }
    }
    const loadAfter = loadavg()[0]!;
    const section = [
      '## HTTP',
      '',
      `Measured by \`npm run bench:http\` (bench/http.ts) on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: ${machine()}.`,
      `autocannon, ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} rounds, median reported. Every round starts a fresh server process for`,
      `each configuration (${ROUNDS * configs.length} processes in all), warms each up for ${WARMUP} s per route and stops them at the round's end, so that`,
      'no single process\'s pace (how V8 optimised its code, how its young generation fills) decides a share; in each round metrics off,',
      'validation on and HTTPS run one after another, every other round in the opposite order, and the goal shares are the median of',
      'the per-round shares (each from two runs seconds apart on two fresh processes), with their range.',
      `${coresLine("autocannon (in the benchmark's process)")} The client's CPU per request (its TLS included) is given too.`,
      'The app is built by `createApp()` as `npm start` builds it (request validation,',
      'bearer auth, rate limiting with every limit raised a million-fold, request ids, info-level pino logs to a discarded',
      'stdout, envelope, Prometheus metrics on their own port); "validation on/off" is `VALIDATE_RESPONSES`; "metrics off" is',
      '`METRICS_PORT=0` with validation on (no HTTP instrumentation, no collection). The bare route is Express 5 returning the same JSON.',
      `"HTTPS" is the same app serving TLS itself (negotiated: ${negotiated}; an EC P-256 certificate from a throwaway CA); autocannon keeps its`,
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

// `npm run bench:tools-api`: the public tools API under load. The service runs as `npm start` runs
// it (server/main.ts: request and response validation, the real rate limits, metrics, logs),
// behind a trusted proxy (TRUST_PROXY=loopback) so that each of the clients is its own client
// address, as on the internet. Every client sends its share of a mix of the tools operations
// one after another (check-site against a local site, ip-info, newsletter subscriptions, contact
// messages; not the probes, which orchestrators call); all clients run at once. The mix keeps
// every client inside its per-address limits, so every answer is expected to be 2xx: anything
// else is reported as an error.
// Reported per operation and overall: count, errors, p50/p99/max latency, requests over 1 s.
// Prints a Markdown table and writes it as the "## Tools API under load" section of
// docs/performance.md.
// The service and the load (the clients and the checked site, this process) run on cores of their
// own (common.ts, CORES): sharing every core, the first round's tail measured the clients as much
// as the service (docs/performance.md, "Tools API: the first round after a start").
//   BENCH_CLIENTS (default 200), BENCH_REQUESTS (default 5000, in all, per round),
//   BENCH_ROUNDS (default 3; each round's clients are new addresses), BENCH_DOC,
//   BENCH_SHARED_CORES=1 (no pinning: the service and the load share every core).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { createServer, get, type Server } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../server/testing/services/ports.ts';
import { checkedSite, TOOLS_MIX, toolsRequest, type ToolsRequestKind } from '../server/warm-up/mix.ts';
import { coresLine, cpuMicros, machine, median, onServiceCores, percentile, pinLoad, writeSection } from './common.ts';
import { NODE_FLAGS } from './tools.ts';

const ROOT = join(import.meta.dirname, '..');
const SCRATCH = join(ROOT, '.bench', 'tools-api');
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 200);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PERFORMANCE = process.env.BENCH_DOC ?? join(ROOT, 'docs', 'performance.md');
/** Answers slower than this count against the goal (check-site's own timeouts excepted). */
const SLOW_MS = 1000;

// Each client's requests go round TOOLS_MIX (server/warm-up/mix.ts) to its share: within every
// per-address limit of a minute (check-site 60, ip-info 30, subscribe 10, contact 5) for up to 30
// requests a client. Round r's clients are 10.r.x.y, the bench's own warm-up's 10.0.0.1.

interface Sample {
  kind: ToolsRequestKind;
  ms: number;
  status: number; // 0: no answer
}

/** The site check-site checks (server/warm-up/mix.ts): answers at once, 200 on / and 404 for a `down` site. */
function site(): Promise<{ server: Server; port: number }> {
  const server = createServer(checkedSite);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })));
}

function request(origin: string, sitePort: number, kind: ToolsRequestKind, client: string, n: number): { url: string; init: RequestInit } {
  const { method, path, body } = toolsRequest(kind, sitePort, { name: 'Bench', email: `bench-${client.replace(/\./g, '-')}-${n}@example.com` });
  const headers: Record<string, string> = { 'x-forwarded-for': client };
  if (body === undefined) return { url: `${origin}${path}`, init: { method, headers } };
  return { url: `${origin}${path}`, init: { method, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) } };
}

async function round(origin: string, sitePort: number, r: number, pid: number): Promise<{ samples: Sample[]; seconds: number; cpuMs: number }> {
  const samples: Sample[] = [];
  const started = performance.now();
  const cpuBefore = cpuMicros(pid);
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      const client = `10.${r}.${Math.floor(c / 250)}.${(c % 250) + 1}`;
      for (let n = c; n < REQUESTS; n += CLIENTS) {
        const kind = TOOLS_MIX[Math.floor(n / CLIENTS) % TOOLS_MIX.length]!;
        const { url, init } = request(origin, sitePort, kind, client, n);
        const t0 = performance.now();
        let status = 0;
        try {
          const res = await fetch(url, init);
          await res.arrayBuffer();
          status = res.status;
        } catch {
          status = 0;
        }
        samples.push({ kind, ms: performance.now() - t0, status });
      }
    }),
  );
  return { samples, seconds: (performance.now() - started) / 1000, cpuMs: (cpuMicros(pid) - cpuBefore) / 1000 };
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  rmSync(SCRATCH, { recursive: true, force: true });
  mkdirSync(SCRATCH, { recursive: true });
  const target = await site();
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  pinLoad();
  const [file, ...args] = onServiceCores([process.execPath, ...NODE_FLAGS, join(ROOT, 'server', 'main.ts')]);
  const child: ChildProcess = spawn(file!, args, {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      DATA_DIR: join(SCRATCH, 'data'),
      MASTER_KEY_FILE: join(SCRATCH, 'keys', 'master.key'),
      TRUST_PROXY: 'loopback',
      CHECK_SITE_ALLOW_PRIVATE: 'true',
      VALIDATE_RESPONSES: 'true',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${origin}/readyz`)).ok) break;
        throw new Error('not ready');
      } catch {
        if (i > 400 || child.exitCode !== null) throw new Error('the server did not start');
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    // The first round starts right after the service answers /readyz, as a freshly started instance
    // takes traffic (its own warm-up, WARM_UP_REQUESTS, ran before it listened), and is reported on
    // its own as well. The bench's own code is warmed first, so that its first requests are not
    // counted as the service's: its HTTP client (Node's fetch is loaded and compiled on first use,
    // on the same machine) against the local site, and the site (which stands for a long-running
    // website) as check-site uses it, a new connection for each request.
    await Promise.all(Array.from({ length: CLIENTS }, async () => {
      for (let i = 0; i < 5; i++) {
        await (await fetch(`http://127.0.0.1:${target.port}/`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '10.0.0.1' }, body: '{}' })).arrayBuffer();
        await new Promise((resolve, reject) => get({ host: '127.0.0.1', port: target.port, path: '/', agent: false }, (res) => res.resume().once('end', resolve)).once('error', reject));
      }
    }));
    const rounds: Array<{ samples: Sample[]; seconds: number; cpuMs: number }> = [];
    for (let r = 1; r <= ROUNDS; r++) {
      const result = await round(origin, target.port, r, child.pid!);
      rounds.push(result);
      const ms = result.samples.map((s) => s.ms);
      process.stderr.write(`round ${r}: ${result.samples.length} requests in ${result.seconds.toFixed(1)} s, server CPU ${(result.cpuMs / result.samples.length).toFixed(2)} ms/request, p99 ${percentile(ms, 99).toFixed(0)} ms, errors ${result.samples.filter((s) => s.status < 200 || s.status > 299).length}\n`);
    }

    const kinds = ['all', ...new Set(TOOLS_MIX)] as const;
    const rows = [
      '| operation | sent a round | errors (all rounds) | p50 ms | p99 ms | max ms | over 1 s |',
      '|---|---:|---:|---:|---:|---:|---:|',
    ];
    for (const kind of kinds) {
      const per = rounds.map(({ samples }) => samples.filter((s) => kind === 'all' || s.kind === kind));
      const errors = per.flat().filter((s) => s.status < 200 || s.status > 299);
      const byStatus = [...new Set(errors.map((s) => s.status))].map((st) => `${errors.filter((s) => s.status === st).length}× ${st || 'no answer'}`).join(', ');
      const stat = (f: (ms: number[]) => number) => median(per.map((s) => f(s.map((x) => x.ms)))).toFixed(0);
      const slow = per.flat().filter((s) => s.ms > SLOW_MS).length;
      rows.push(
        `| ${kind} | ${per[0]!.length} | ${errors.length}${byStatus ? ` (${byStatus})` : ''} | ${stat((m) => percentile(m, 50))} | ${stat((m) => percentile(m, 99))} | ${stat((m) => Math.max(...m))} | ${slow} |`,
      );
    }
    const all = rounds.flatMap((r) => r.samples);
    const slowOutsideTimeouts = all.filter((s) => s.ms > SLOW_MS && !s.kind.startsWith('check-site')).length;
    const slowCheckSite = all.filter((s) => s.ms > SLOW_MS && s.kind.startsWith('check-site')).length;
    const first = rounds[0]!.samples;
    const firstSlow = first.filter((s) => s.ms > SLOW_MS && !s.kind.startsWith('check-site')).length;
    const firstSlowCheckSite = first.filter((s) => s.ms > SLOW_MS && s.kind.startsWith('check-site')).length;
    const throughput = median(rounds.map((r) => r.samples.length / r.seconds));
    const loadAfter = loadavg()[0]!;
    const section = [
      '## Tools API under load',
      '',
      `Measured by \`npm run bench:tools-api\` (bench/tools-api.ts) on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: ${machine()}.`,
      `${REQUESTS} requests a round from ${CLIENTS} clients at once, each client its own address (the service behind a trusted`,
      'proxy, `TRUST_PROXY=loopback`, X-Forwarded-For), each sending its share one request after another; ' + `${ROUNDS} rounds, median of the rounds`,
      'reported for the latencies. The service runs as `npm start` runs it (request and response validation, the real per-address',
      'rate limits, metrics, info-level logs); check-site checks a site on the same machine (`CHECK_SITE_ALLOW_PRIVATE=true`) that',
      'answers at once, 200 or 404 (`check-site-down`: the site is reported `down`, still a 200 answer). The mix keeps every client',
      `within its limits, so every answer is expected 2xx; any other is an error. ${coresLine('the clients and the checked site')}`,
      `Other work on the machine: 1-minute load average ${loadBefore.toFixed(1)} at the start, ${loadAfter.toFixed(1)} at the end.`,
      '',
      ...rows,
      '',
      `- Throughput: **${throughput.toFixed(0)} requests/s** (median of the rounds), the service spending ${median(rounds.map((r) => r.cpuMs / r.samples.length)).toFixed(2)} ms of CPU per request`,
      `  (user + system; with a core to itself it would serve about ${(1000 / median(rounds.map((r) => r.cpuMs / r.samples.length))).toFixed(0)} requests/s);`,
      `  p99 of all operations **${median(rounds.map((r) => percentile(r.samples.map((s) => s.ms), 99))).toFixed(0)} ms**;`,
      `  errors **${all.filter((s) => s.status < 200 || s.status > 299).length}** of ${all.length}; requests over 1 s: **${slowOutsideTimeouts}** outside check-site, ${slowCheckSite} check-site (goal: none over 1 s except check-site's own timeouts).`,
      `- The first round, started as soon as the freshly started service answered /readyz (after its own warm-up, WARM_UP_REQUESTS; no request of the benchmark before it): p99 **${percentile(first.map((s) => s.ms), 99).toFixed(0)} ms**, max ${Math.max(...first.map((s) => s.ms)).toFixed(0)} ms,`,
      `  over 1 s: **${firstSlow}** outside check-site, ${firstSlowCheckSite} check-site; p99 of each round: ${rounds.map((r) => percentile(r.samples.map((s) => s.ms), 99).toFixed(0)).join(', ')} ms.`,
      '',
    ].join('\n');
    process.stdout.write(`${section}\n`);
    writeSection(PERFORMANCE, '## Tools API under load', section);
  } finally {
    target.server.close();
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

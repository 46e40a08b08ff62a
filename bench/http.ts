// `npm run bench:http`: autocannon against GET /api/v1/backup/{id} and GET /api/tools/ip-info
// on the real server with response validation on, then off, and on a bare Express route
// returning the same JSON. Prints a Markdown table and writes it to docs/performance.md.
//   BENCH_SECONDS (default 10) per run, BENCH_CONNECTIONS (default 10).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';

interface Result {
  requests: { average: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: object) => Promise<Result>;

const ROOT = join(import.meta.dirname, '..');
const SCRATCH = join(ROOT, '.bench', 'http');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const KEY = 'key_bench_http';
const SECRET = 'bench-http-secret-0123456789';

function start(script: string, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [join(ROOT, script)], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
}

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`not ready: ${url}`);
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

async function run(url: string, headers: Record<string, string>): Promise<Result> {
  await autocannon({ url, headers, connections: CONNECTIONS, duration: 2 }); // warm-up
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS });
  if (r.non2xx || r.errors || r.timeouts) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  return r;
}

async function main(): Promise<void> {
  rmSync(SCRATCH, { recursive: true, force: true });
  const root = join(SCRATCH, 'root');
  mkdirSync(join(root, 'docs'), { recursive: true });
  for (let i = 0; i < 20; i++) writeFileSync(join(root, 'docs', `f${i}.txt`), `file ${i}\n`.repeat(100));
  const env = {
    HOST: '127.0.0.1',
    DATA_DIR: join(SCRATCH, 'data'),
    BACKUP_ALLOWED_ROOTS: root,
    BACKUP_BOOTSTRAP_API_KEY: KEY,
    BACKUP_BOOTSTRAP_SECRET: SECRET,
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'info',
  };

  const ports = { on: 18201, off: 18202, bare: 18203 };
  let server = start('server/main.ts', { ...env, PORT: String(ports.on), VALIDATE_RESPONSES: 'true' });
  await waitReady(`http://127.0.0.1:${ports.on}/api/v1/status`);
  const api = `http://127.0.0.1:${ports.on}/api/v1`;
  const token = ((await (await fetch(`${api}/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: KEY, secret: SECRET }) })).json()) as any).data.access_token as string;
  const auth = { authorization: `Bearer ${token}` };
  const created = (await (await fetch(`${api}/backup`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', prefer: 'wait=30' }, body: JSON.stringify({ source: join(root, 'docs') }) })).json()) as any;
  const id = created.data.id as string;
  const bodies = {
    backup: await (await fetch(`${api}/backup/${id}`, { headers: auth })).json(),
    ipInfo: await (await fetch(`http://127.0.0.1:${ports.on}/api/tools/ip-info`)).json(),
  };
  writeFileSync(join(SCRATCH, 'bodies.json'), JSON.stringify(bodies));

  const routes = [
    { name: 'GET /api/v1/backup/{id}', path: `/api/v1/backup/${id}`, headers: auth },
    { name: 'GET /api/tools/ip-info', path: '/api/tools/ip-info', headers: {} },
  ];
  const results: Record<string, Record<string, Result>> = {};
  const measureAll = async (label: string, port: number): Promise<void> => {
    for (const r of routes) ((results[r.name] ??= {})[label] = await run(`http://127.0.0.1:${port}${r.path}`, r.headers));
  };

  await measureAll('validation on', ports.on);
  await stop(server);
  server = start('server/main.ts', { ...env, PORT: String(ports.off), VALIDATE_RESPONSES: 'false' });
  await waitReady(`http://127.0.0.1:${ports.off}/api/v1/status`);
  await measureAll('validation off', ports.off);
  await stop(server);
  server = start('bench/http-bare.ts', { PORT: String(ports.bare), BARE_BODIES: join(SCRATCH, 'bodies.json') });
  await waitReady(`http://127.0.0.1:${ports.bare}/api/tools/ip-info`);
  await measureAll('bare Express', ports.bare);
  await stop(server);

  const rows = ['| route | configuration | req/s | p50 ms | p99 ms |', '|---|---|---:|---:|---:|'];
  const ratios: string[] = [];
  for (const [route, byLabel] of Object.entries(results)) {
    for (const [label, r] of Object.entries(byLabel)) {
      rows.push(`| ${route} | ${label} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} |`);
    }
    const on = byLabel['validation on']!.requests.average;
    const off = byLabel['validation off']!.requests.average;
    const bare = byLabel['bare Express']!.requests.average;
    ratios.push(
      `- ${route}: response validation costs ${((1 - on / off) * 100).toFixed(1)} % of throughput (off/on = ${(off / on).toFixed(2)}×); ` +
        `the whole stack (request validation, auth, rate-limit bookkeeping, logging, envelope) runs at ${((on / bare) * 100).toFixed(0)} % of a bare route with validation on, ${((off / bare) * 100).toFixed(0)} % with it off.`,
    );
  }
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const text = [
    '# HTTP performance',
    '',
    `Measured by \`npm run bench:http\` (bench/http.ts) on ${new Date().toISOString().slice(0, 10)}: ${machine}.`,
    `autocannon, ${CONNECTIONS} connections, ${SECONDS} s per run after a 2 s warm-up, client and server on the same machine.`,
    'The server runs as `npm start` would, with `RATE_LIMITS=off` (so the run measures work, not 429s) and info-level logging;',
    '"validation on/off" is `VALIDATE_RESPONSES` (requests are validated in both). The bare route is Express 5 returning the same JSON.',
    '',
    ...rows,
    '',
    ...ratios,
    '',
  ].join('\n');
  process.stdout.write(text);
  writeFileSync(join(ROOT, 'docs', 'performance.md'), text);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

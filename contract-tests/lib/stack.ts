/**
 * What the checks run against: a real server process on an ephemeral loopback port with its own
 * temporary data directory, allowed root (with fixture files) and bootstrap key; the Prism mock;
 * and a loopback website for check-site to probe.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort, start, waitForHttp, type Proc } from './proc.ts';

export const ROOT = new URL('../../', import.meta.url).pathname.replace(/\/$/, '');

export const CREDENTIALS = {
  apiKey: 'key_contracttests0000000000001',
  secret: 'contract-tests-secret-0123456789abcdef0123456789',
};

/** One temporary directory per runner invocation, holding every server's files and logs. */
export const WORK = mkdtempSync(join(tmpdir(), 'contract-tests-'));

export interface ServerHandle {
  name: string;
  origin: string;
  backupBase: string;
  /** The allowed root; `source` holds the fixture tree, restores go under it too. */
  allowedRoot: string;
  source: string;
  /** A tree whose backup runs until cancelled (a 256 GiB sparse file). */
  bigSource: string;
  dataDir: string;
  logFile: string;
  /** The CA that signed the server's certificate, when it serves HTTPS (TLS_CERT_FILE in its env). */
  caFile?: string;
  /** A new API key of its own account, made as an operator makes one (`npm run keys -- create`). */
  newKey(plan: 'free_trial' | 'pro' | 'business'): { apiKey: string; secret: string; accountId: string };
  stop(): Promise<void>;
}

function writeFixtures(source: string): void {
  mkdirSync(join(source, 'docs', 'nested'), { recursive: true });
  writeFileSync(join(source, 'hello.txt'), 'hello, contract tests\n');
  writeFileSync(join(source, 'docs', 'readme.md'), '# fixture\n'.repeat(50));
  writeFileSync(join(source, 'docs', 'nested', 'data.json'), JSON.stringify({ n: Array.from({ length: 500 }, (_, i) => i) }));
  const blob = Buffer.alloc(256 * 1024);
  for (let i = 0; i < blob.length; i++) blob[i] = (i * 7919) % 251;
  writeFileSync(join(source, 'blob.bin'), blob);
  symlinkSync('hello.txt', join(source, 'link-to-hello'));
}

function writeBigFixture(dir: string): void {
  mkdirSync(dir, { recursive: true });
  // 256 GiB of holes (no disk): a backup of it is still running when a flow cancels it, however
  // fast the machine or slow the requests.
  const file = join(dir, 'sparse.bin');
  writeFileSync(file, '');
  truncateSync(file, 256 * 1024 ** 3);
}

/**
 * Starts `node server/main.ts` exactly as an operator would, with the contract's env names; over
 * HTTPS when `extraEnv` sets TLS_CERT_FILE/TLS_KEY_FILE (then `caFile` is the CA that signed it).
 */
export async function startServer(name: string, extraEnv: Record<string, string> = {}, caFile?: string): Promise<ServerHandle> {
  const dir = join(WORK, name);
  const dataDir = join(dir, 'data');
  const allowedRoot = join(dir, 'root');
  const source = join(allowedRoot, 'source');
  mkdirSync(dataDir, { recursive: true });
  mkdirSync(source, { recursive: true });
  writeFixtures(source);
  const bigSource = join(allowedRoot, 'big');
  writeBigFixture(bigSource);
  const port = await freePort();
  const logFile = join(dir, 'server.log');
  const env = {
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
      BACKUP_ALLOWED_ROOTS: allowedRoot,
      BACKUP_BOOTSTRAP_API_KEY: CREDENTIALS.apiKey,
      BACKUP_BOOTSTRAP_SECRET: CREDENTIALS.secret,
      BACKUP_BOOTSTRAP_PLAN: 'business',
      CHECK_SITE_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'test',
      // No warm-up (server/warm-up), as in the tests' spawned servers: with several checks starting
      // servers at once on two cores, its second or more of every start went past the 20 s wait.
      WARM_UP_REQUESTS: '0',
      ...extraEnv,
  };
  const proc: Proc = start(process.execPath, ['server/main.ts'], { cwd: ROOT, logFile, env });
  const newKey = (plan: string): { apiKey: string; secret: string; accountId: string } => {
    const out = execFileSync(process.execPath, ['server/keys-cli.ts', 'create', '--plan', plan], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8' });
    const field = (name: string): string => new RegExp(`^${name}:\\s+(\\S+)`, 'm').exec(out)?.[1] ?? '';
    return { apiKey: field('api_key'), secret: field('secret'), accountId: field('account') };
  };
  const origin = `${extraEnv.TLS_CERT_FILE ? 'https' : 'http'}://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${origin}/api/v1/status`, 20_000, proc);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { name, origin, backupBase: `${origin}/api/v1`, allowedRoot, source, bigSource, dataDir, logFile, ...(caFile ? { caFile } : {}), newKey, stop: () => proc.stop() };
}

export interface MockHandle {
  backupOrigin: string;
  toolsOrigin: string;
  stop(): Promise<void>;
}

/** The mock (mock/serve.ts's startMock, run in this process) on two ephemeral ports. */
export async function startMockServers(): Promise<MockHandle> {
  const mod = (await import(pathToFileURL(join(ROOT, 'mock', 'start.ts')).href)) as {
    startMock: (o: { backupPort: number; toolsPort: number; host?: string }) => Promise<{ backupUrl: string; toolsUrl: string; close(): Promise<void> }>;
  };
  const mock = await mod.startMock({ backupPort: 0, toolsPort: 0, host: '127.0.0.1' });
  const backupOrigin = new URL(mock.backupUrl).origin;
  const toolsOrigin = new URL(mock.toolsUrl).origin;
  await waitForHttp(`${backupOrigin}/api/v1/status`, 30_000);
  return { backupOrigin, toolsOrigin, stop: () => mock.close() };
}

export interface SiteHandle {
  origin: string;
  stop(): Promise<void>;
}

/** A loopback website for check-site: / answers 200, /down 503, /redirect 302 to /. */
export async function startTargetSite(): Promise<SiteHandle> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/down') res.writeHead(503).end('down');
    else if (req.url === '/redirect') res.writeHead(302, { Location: '/' }).end();
    else res.writeHead(200, { 'Content-Type': 'text/plain' }).end('up');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    origin: `http://127.0.0.1:${address.port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

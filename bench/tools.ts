import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, readdir, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { warmTree } from './fs-state.ts';

/** One measured child process: wall time (measured here) and peak RSS (GNU time's %M). */
export interface Measure {
  seconds: number;
  cpuSeconds: number; // user + system
  rssMb: number;
  stdout: string;
}

export async function measure(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; scratch: string }): Promise<Measure> {
  const rssFile = join(opts.scratch, `time-${process.pid}-${Date.now()}.txt`);
  execFileSync('sync'); // dirty pages of the previous step are not flushed on this one's time
  const started = performance.now();
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', '%M %U %S', '-o', rssFile, cmd, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (c) => resolve({ code: c, stdout: out, stderr: err }));
  });
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${code}):\n${stderr.slice(-2000)}`);
  const [rssKb, user, sys] = (await readFile(rssFile, 'utf8')).trim().split('\n').at(-1)!.split(' ').map(Number);
  await rm(rssFile, { force: true });
  return { seconds, cpuSeconds: user! + sys!, rssMb: rssKb! / 1024, stdout };
}

export async function dirBytes(dir: string): Promise<number> {
  let n = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += (await stat(join(e.parentPath, e.name))).size;
  }
  return n;
}

/** A backup tool under test. `home` is a scratch dir for caches and settings, fresh each run. */
export interface Tool {
  name: string;
  init(repo: string, home: string): Promise<void>;
  backup(repo: string, source: string, home: string): Promise<Measure & { snapshot: string }>;
  restore(repo: string, snapshot: string, target: string, home: string): Promise<Measure>;
}

const PASSWORD = 'bench-password-not-secret';


/** `npm start`'s command (its script in `checkout`'s package.json): every process a benchmark starts runs as it runs the server. */
function startScript(checkout: string): string {
  return (JSON.parse(readFileSync(join(checkout, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
}

/**
 * The V8 flags of that command: every process of `checkout` a benchmark starts runs with them, so
 * it measures what that checkout ships (another checkout side by side runs with its own).
 * (4 MB semi-spaces: without them V8 lets the main thread's young generation grow to 128 MB; see
 * docs/decisions.md.)
 */
export function nodeFlags(checkout: string): string[] {
  return /\bnode((?: --\S+)*) server\/main\.ts/.exec(startScript(checkout))?.[1]!.trim().split(' ').filter(Boolean) ?? [];
}

/** This checkout. */
const ROOT = join(import.meta.dirname, '..');

/** This checkout's flags. */
export const NODE_FLAGS: string[] = nodeFlags(ROOT);

// The command's environment (`env NAME=value … node`: glibc's malloc settings, Node's compile
// cache) is set for every process the benchmark starts, the peers' too (restic, a Go binary, uses
// neither). A path in it is relative to the checkout, where npm runs its scripts.
for (const [, name, value] of /\benv((?: \w+=\S+)+) node\b/.exec(startScript(ROOT))?.[1]!.matchAll(/(\w+)=(\S+)/g) ?? []) process.env[name!] = value!.includes('/') ? resolve(ROOT, value!) : value!;

export function ours(root: string): Tool {
  const cli = join(root, 'bench', 'engine-cli.ts');
  const flags = nodeFlags(root);
  return {
    name: 'ours',
    async init() {
      // The repository is created on first open, inside the first backup's time.
    },
    async backup(repo, source, home) {
      const m = await measure(process.execPath, [...flags, cli, 'backup', repo, source], { scratch: home });
      return { ...m, snapshot: (JSON.parse(m.stdout) as { snapshotId: string }).snapshotId };
    },
    restore(repo, snapshot, target, home) {
      return measure(process.execPath, [...flags, cli, 'restore', repo, snapshot, target], { scratch: home });
    },
  };
}

export function restic(): Tool {
  const env = (home: string) => ({ RESTIC_PASSWORD: PASSWORD, RESTIC_CACHE_DIR: join(home, 'cache') });
  return {
    name: 'restic',
    async init(repo, home) {
      await measure('restic', ['-r', repo, 'init', '--repository-version', '2'], { env: env(home), scratch: home });
    },
    async backup(repo, source, home) {
      const m = await measure('restic', ['-r', repo, 'backup', '-q', source], { env: env(home), scratch: home });
      return { ...m, snapshot: 'latest' };
    },
    restore(repo, snapshot, target, home) {
      return measure('restic', ['-r', repo, 'restore', snapshot, '--target', target], { env: env(home), scratch: home });
    },
  };
}

export function borg(): Tool {
  let n = 0;
  const env = (home: string) => ({
    BORG_PASSPHRASE: PASSWORD,
    BORG_BASE_DIR: home,
    BORG_RELOCATED_REPO_ACCESS_IS_OK: 'yes',
    BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK: 'yes',
  });
  return {
    name: 'borg',
    async init(repo, home) {
      await measure('borg', ['init', '--encryption=repokey', repo], { env: env(home), scratch: home });
    },
    async backup(repo, source, home) {
      const name = `s${++n}`;
      const m = await measure('borg', ['create', '--compression', 'zstd', `${repo}::${name}`, '.'], { env: env(home), cwd: source, scratch: home });
      // borg drops the files it read from the page cache (posix_fadvise DONTNEED): read them
      // back, untimed, so that the tool after it starts from the same warm cache as borg did.
      warmTree(source);
      return { ...m, snapshot: name };
    },
    async restore(repo, snapshot, target, home) {
      await mkdir(target, { recursive: true });
      return measure('borg', ['extract', `${repo}::${snapshot}`], { env: env(home), cwd: target, scratch: home });
    },
  };
}

export function have(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** restic, borg and GNU time, installed with apt-get when missing. */
export function ensureInstalled(): void {
  const missing = [['restic', 'restic'], ['borg', 'borgbackup'], ['/usr/bin/time', 'time']].filter(([cmd]) => !have(cmd!)).map(([, pkg]) => pkg!);
  if (missing.length === 0) return;
  console.log(`installing ${missing.join(', ')} with apt-get`);
  execFileSync('apt-get', ['update'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', ...missing], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

export function version(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8' }).trim().split('\n')[0]!;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** A port free right now on loopback (so that parallel runs of anything else do not collide). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

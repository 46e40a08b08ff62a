/**
 * The server as a user runs it, for tests of start-up and signals: spawned with its own
 * environment, its output collected, its process tree observable through /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const PROJECT_ROOT = join(import.meta.dirname, '..', '..');

export interface Started {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  /** Resolves with the listening port once the server logged it; rejects if it exits first. */
  listening(timeoutMs?: number): Promise<number>;
}

/** Runs `command args` in the project root with `env` added to this process's environment. */
export function run(command: string, args: string[], env: Record<string, string>): Started {
  const child = spawn(command, args, { cwd: PROJECT_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exited,
    async listening(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const line = out.split('\n').find((l) => l.includes('backup service listening'));
        if (line) return (JSON.parse(line) as { port: number }).port;
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode} before listening:\n${out}`);
        await sleep(50);
      }
      throw new Error(`not listening after ${timeoutMs} ms:\n${out}`);
    },
  };
}

/**
 * `node server/main.ts`, exactly as `npm start` runs it; on free ports (API and metrics) unless
 * `env` names them, and without the warm-up (a second or more of every start) unless `env` asks.
 */
export function startServerProcess(env: Record<string, string>): Started {
  return run(process.execPath, [join(PROJECT_ROOT, 'server', 'main.ts')], { PORT: '0', METRICS_PORT: '0', WARM_UP_REQUESTS: '0', ...env });
}

/** A started server with the ports of its "listening" line: the API's, and the metrics listener's (null when off). */
export interface ListeningServer extends Started {
  port: number;
  metricsPort: number | null;
}

/** `node server/main.ts`, waited for until it listens; it is killed if it does not. */
export async function startListeningServer(env: Record<string, string>): Promise<ListeningServer> {
  const started = startServerProcess(env);
  try {
    const port = await started.listening();
    const line = started.output().split('\n').find((l) => l.includes('backup service listening'))!;
    return { ...started, port, metricsPort: (JSON.parse(line) as { metrics_port: number | null }).metrics_port };
  } catch (err) {
    started.child.kill('SIGKILL');
    throw err;
  }
}

/** Whether a process exists and is not a zombie. */
export function alive(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return false;
  try {
    // "pid (comm) S ...": the state follows the last ')'.
    const text = readFileSync(stat, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2, text.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The direct children of a process (Linux). */
export function childrenOf(pid: number): number[] {
  const file = `/proc/${pid}/task/${pid}/children`;
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number);
}

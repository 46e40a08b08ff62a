/**
 * Child processes for the contract run: each one gets its own process group so that stopping it
 * also stops whatever it spawned (Prism forks, npm wrappers), and every group still alive is
 * killed when the runner exits, however it exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { send } from './http.ts';

const live = new Set<ChildProcess>();

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
}

process.on('exit', () => {
  for (const child of live) killGroup(child, 'SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    for (const child of live) killGroup(child, 'SIGKILL');
    process.exit(130);
  });
}

export interface Proc {
  child: ChildProcess;
  logFile: string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

export interface StartOptions {
  cwd: string;
  env?: Record<string, string>;
  logFile: string;
}

/** Starts a long-running or one-shot process, its stdout and stderr appended to logFile. */
export function start(command: string, args: string[], options: StartOptions): Proc {
  const log: WriteStream = createWriteStream(options.logFile, { flags: 'a' });
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  const exited = new Promise<number | null>((resolve) => {
    child.on('error', (err) => {
      log.write(`\n[spawn error] ${err.message}\n`);
    });
    child.on('close', (code) => {
      live.delete(child);
      log.end();
      resolve(code);
    });
  });
  return {
    child,
    logFile: options.logFile,
    exited,
    async stop() {
      killGroup(child, 'SIGTERM');
      const grace = new AbortController();
      const done = await Promise.race([exited.then(() => true), sleep(3000, false, { signal: grace.signal }).catch(() => false)]);
      grace.abort();
      if (!done) {
        killGroup(child, 'SIGKILL');
        await exited;
      }
    },
  };
}

/** Runs a process to completion (or kills it after timeoutMs) and returns its exit code. */
export async function run(
  command: string,
  args: string[],
  options: StartOptions & { timeoutMs: number },
): Promise<{ code: number | null; timedOut: boolean }> {
  const proc = start(command, args, options);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), options.timeoutMs);
  });
  const outcome = await Promise.race([proc.exited, timeout]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    await proc.stop();
    return { code: null, timedOut: true };
  }
  return { code: outcome, timedOut: false };
}

/** An unused TCP port on 127.0.0.1 (bound and released; the tiny race is acceptable here). */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        reject(new Error('no port'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/** Polls url until it answers with any HTTP status, or fails after timeoutMs. */
export async function waitForHttp(url: string, timeoutMs: number, proc?: Proc): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc && (proc.child.exitCode !== null || proc.child.signalCode !== null)) {
      throw new Error(`process exited before ${url} answered (see ${proc.logFile})`);
    }
    try {
      await send({ method: 'GET', url, timeoutMs: 2000 });
      return;
    } catch {
      if (Date.now() > deadline) {
        throw new Error(`${url} did not answer within ${timeoutMs} ms${proc ? ` (see ${proc.logFile})` : ''}`);
      }
      await sleep(150);
    }
  }
}

/**
 * A throwaway Redis 7 for tests and benchmarks: `redis-server` from Debian in a temp directory,
 * bound to 127.0.0.1 on a free port, no persistence, stopped by PID. One per test file that needs
 * it (share it within the file). `stop()` and `start()` take it down and bring it back on the
 * same port, for tests of what the server does while Redis is away.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { requirePackages } from './packages.ts';
import { freePort } from './ports.ts';

export interface RedisServer {
  /** `redis://127.0.0.1:PORT`, what REDIS_URL is set to. */
  url: string;
  port: number;
  /** PID of the running redis-server, or undefined while stopped. */
  readonly pid: number | undefined;
  /** Kills it (SIGKILL, as a crash or a lost host would); the port and directory stay. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: nothing was persisted). */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  cleanup(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** True once the server answers PING with PONG. */
function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      reply += d.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

export async function startRedis(): Promise<RedisServer> {
  requirePackages(['redis-server']);
  const dir = mkdtempSync(join(tmpdir(), 'redis-'));
  const logFile = join(dir, 'redis.log');
  let port = await freePort();
  let child: ChildProcess | undefined;

  const launch = async (): Promise<boolean> => {
    const log = openSync(logFile, 'a');
    const proc = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', dir, '--protected-mode', 'yes'],
      { stdio: ['ignore', log, log] },
    );
    closeSync(log);
    live.add(proc);
    const exited = once(proc, 'exit').then(() => live.delete(proc));
    for (let i = 0; i < 100; i++) {
      if (proc.exitCode !== null) break;
      if (await pings(port)) {
        child = proc;
        return true;
      }
      await sleep(50);
    }
    proc.kill('SIGKILL');
    await exited;
    return false;
  };

  const server: RedisServer = {
    url: '',
    port,
    get pid() {
      return child?.pid;
    },
    async stop() {
      const proc = child;
      child = undefined;
      if (!proc || proc.exitCode !== null) return;
      const exited = once(proc, 'exit');
      proc.kill('SIGKILL');
      await exited;
    },
    async start() {
      if (child) return;
      if (!(await launch())) throw new Error(`redis-server did not come back on port ${port}: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
    },
    async cleanup() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };

  // The port was free a moment ago; another process may take it first, so try a few.
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await launch()) {
      server.port = port;
      server.url = `redis://127.0.0.1:${port}`;
      return server;
    }
    port = await freePort();
  }
  const log = readFileSync(logFile, 'utf8').slice(-2000);
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`redis-server did not start: ${log}`);
}

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requirePackages } from './packages.ts';
import { freePort } from './ports.ts';

const BIN = '/usr/lib/postgresql/15/bin';

/** A throwaway PostgreSQL 15 cluster for one test file or benchmark. */
export interface PostgresServer {
  port: number;
  /** The cluster's first database, as the application role. */
  url: string;
  /** A new, empty database; resolves its URL. */
  createDatabase(): Promise<string>;
  /** Stops the server, keeping its data (an outage); `resume` starts it again on the same port. */
  suspend(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
}

function asPostgres(args: string[]): string {
  return execFileSync('runuser', ['-u', 'postgres', '--', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

/**
 * Starts PostgreSQL as the recipe in services.md says: initdb and pg_ctl as the postgres user (it
 * refuses root) on a temp directory it owns, a free loopback port, fsync off; a role with a
 * password that may create databases. Stopped by PID. Fails naming the package when it is missing.
 */
export async function startPostgres(options: { fsync?: boolean } = {}): Promise<PostgresServer> {
  requirePackages(['postgresql']);
  const dir = mkdtempSync(join(tmpdir(), 'pg-'));
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  const data = join(dir, 'data');
  const sockets = join(dir, 'run');
  mkdirSync(sockets);
  for (const d of [dir, sockets]) chownSync(d, uid, gid);
  const password = randomBytes(12).toString('hex');
  asPostgres([`${BIN}/initdb`, '-D', data, '-U', 'postgres', '--auth-local=trust', '--auth-host=scram-sha-256', '-E', 'UTF8', '--locale=C', '--no-sync']);
  let port = 0;
  let pid = 0;
  const launch = (): void => {
    const settings = ['-p', String(port), '-k', sockets, '-c', 'listen_addresses=127.0.0.1', '-c', `fsync=${options.fsync ? 'on' : 'off'}`, '-c', 'max_connections=200'];
    asPostgres([`${BIN}/pg_ctl`, '-D', data, '-l', join(dir, 'log'), '-w', '-t', '30', '-o', settings.join(' '), 'start']);
    pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  };
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      launch();
      break;
    } catch (err) {
      if (attempt >= 2) {
        let log = '';
        try {
          log = readFileSync(join(dir, 'log'), 'utf8');
        } catch {
          // no log written
        }
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`PostgreSQL did not start: ${(err as Error).message}\n${log}`);
      }
    }
  }
  const halt = async (): Promise<void> => {
    if (!processGone(pid)) process.kill(pid, 'SIGINT'); // fast shutdown: ends sessions, no checkpoint wait
    for (let i = 0; i < 200 && !processGone(pid); i++) await new Promise((r) => setTimeout(r, 25));
    if (!processGone(pid)) process.kill(pid, 'SIGKILL');
  };
  // If the test process dies first, the cluster goes with it.
  const onExit = (): void => {
    if (!processGone(pid)) process.kill(pid, 'SIGQUIT');
  };
  process.once('exit', onExit);
  const psql = (sql: string): string => asPostgres([`${BIN}/psql`, '-h', sockets, '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-qAtc', sql]);
  psql(`CREATE ROLE backup LOGIN CREATEDB PASSWORD '${password}'`);
  psql('CREATE DATABASE backup OWNER backup');
  const urlOf = (db: string): string => `postgres://backup:${password}@127.0.0.1:${port}/${db}`;
  let databases = 0;
  return {
    port,
    url: urlOf('backup'),
    async createDatabase() {
      const name = `t${process.pid}_${++databases}_${randomBytes(3).toString('hex')}`;
      psql(`CREATE DATABASE ${name} OWNER backup`);
      return urlOf(name);
    },
    suspend: halt,
    async resume() {
      launch();
    },
    async stop() {
      process.off('exit', onExit);
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

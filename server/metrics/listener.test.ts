import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../testing/services/ports.ts';
import { startListeningServer, type ListeningServer } from '../testing/processes.ts';

/** The TCP ports a process listens on, from /proc: its socket inodes matched against the LISTEN entries. */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const target = (() => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    })();
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m) inodes.add(m[1]!);
  }
  const ports: number[] = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10 || cols[3] !== '0A' || !inodes.has(cols[9]!)) continue;
      ports.push(parseInt(cols[1]!.split(':')[1]!, 16));
    }
  }
  return ports.sort((a, b) => a - b);
}

/** An IPv4 address of this machine that is not loopback (the metrics port must refuse it by default). */
function externalIPv4(): string {
  const found = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal);
  if (!found) throw new Error('this test needs a non-loopback IPv4 address on the machine');
  return found.address;
}

/** 'open' when a TCP connection to host:port is accepted, else the error code (ECONNREFUSED). */
function tryConnect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('open');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe('the metrics listener of npm start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'metrics-listener-'));
  const running: ListeningServer[] = [];
  const start = async (env: Record<string, string>): Promise<ListeningServer> => {
    const p = await startListeningServer({ DATA_DIR: join(dir, `data-${running.length}`), MASTER_KEY_FILE: join(dir, 'keys', 'master.key'), BACKUP_ALLOWED_ROOTS: dir, AUDIT_LOG: join(dir, 'audit.log'), ...env });
    running.push(p);
    return p;
  };
  const stop = async (p: ListeningServer): Promise<void> => {
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  };
  afterAll(() => {
    for (const p of running) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('listens on 127.0.0.1 by default: a scrape from loopback works, a connection to another address is refused', async () => {
    const metricsPort = await freePort();
    const p = await start({ METRICS_PORT: String(metricsPort) });
    expect(p.metricsPort).toBe(metricsPort);
    expect(listeningPorts(p.child.pid!)).toEqual([p.port, metricsPort].sort((a, b) => a - b));
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('# TYPE backup_http_requests_total counter');
    expect(await tryConnect(externalIPv4(), metricsPort)).toBe('ECONNREFUSED');
    await stop(p);
  });

  it('listens where METRICS_HOST says (here every interface, so the other address connects)', async () => {
    const metricsPort = await freePort();
    const p = await start({ METRICS_PORT: String(metricsPort), METRICS_HOST: '0.0.0.0' });
    expect(await tryConnect(externalIPv4(), metricsPort)).toBe('open');
    await stop(p);
  });

  it('opens no port at all for metrics with METRICS_PORT=0', async () => {
    const p = await start({ METRICS_PORT: '0' });
    expect(p.metricsPort).toBeNull();
    expect(listeningPorts(p.child.pid!)).toEqual([p.port]);
    await stop(p);
  });

  it('refuses a bad METRICS_PORT or METRICS_HOST at start, naming it', async () => {
    for (const [name, value] of [['METRICS_PORT', '99999'], ['METRICS_HOST', 'every interface']] as const) {
      const failed = await start({ [name]: value }).catch((err: Error) => err.message);
      expect(failed).toContain(`Configuration error: ${name}`);
    }
  });
});

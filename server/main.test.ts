import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runKeysCli } from './keys-cli.ts';
import { EXIT } from './start-refusal.ts';

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  port: number | null;
}

/** How long a start may take: on a loaded 2-core machine, beside the suite's other files, start-up took over 15 s. */
const START_MS = 60_000;

/** Starts `npm start`'s entry point and waits until it listens (or exits). */
async function start(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'main.ts')], { env: { ...process.env, PORT: '0', METRICS_PORT: '0', HOST: '127.0.0.1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  for (const until = Date.now() + START_MS; Date.now() < until && !out.includes('backup service listening'); ) {
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const port = /"port":(\d+)/.exec(out);
  return { child, output: () => out, exited, port: port ? Number(port[1]) : null };
}

async function stop(s: Started): Promise<{ out: string; code: number | null }> {
  s.child.kill('SIGTERM');
  const code = await s.exited;
  return { out: s.output(), code };
}

/** Every file and directory under `dir` with its permission bits. */
function modes(dir: string): Array<{ path: string; mode: string }> {
  const out: Array<{ path: string; mode: string }> = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      out.push({ path: p, mode: (statSync(p).mode & 0o777).toString(8) });
      if (e.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}

describe('npm start', { timeout: 4 * START_MS }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'main-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const env = { DATA_DIR: join(dir, 'data'), BACKUP_ALLOWED_ROOTS: dir, XDG_CONFIG_HOME: join(dir, 'config') };

  it('prints a development key on the first start only, and keeps every file it makes 0600, every directory 0700', async () => {
    const first = await stop(await start(env));
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/api_key: key_[0-9A-Z]{26}\n\s+secret:\s+sk_/);
    const second = await stop(await start(env));
    expect(second.code).toBe(0);
    expect(second.out).not.toContain('api_key:');
    // The master key is created in its documented default place, outside DATA_DIR.
    expect(statSync(join(dir, 'config', 'backup-service', 'master.key')).mode & 0o777).toBe(0o600);
    const made = [...modes(join(dir, 'data')), ...modes(join(dir, 'config', 'backup-service'))];
    expect(made.map((m) => m.path)).toEqual(expect.arrayContaining([join(dir, 'data', 'service.db'), join(dir, 'data', 'secrets', 'token-signing-key')]));
    for (const m of made) expect(m).toEqual({ path: m.path, mode: statSync(m.path).isDirectory() ? '700' : '600' });
  });

  it('refuses a second server on the same DATA_DIR at once, with its own exit code, while the first keeps serving', async () => {
    const first = await start(env);
    try {
      expect(first.port).not.toBeNull();
      const second = await start({ ...env, PORT: '0' });
      expect(await second.exited).toBe(EXIT.dataDirLocked);
      expect(second.output()).toContain(`Another server is already running on ${join(dir, 'data')}`);
      // Still serving (whether /status says ok or degraded depends on the machine's load, not the refusal).
      const status = await fetch(`http://127.0.0.1:${first.port}/api/v1/status`);
      expect(status.status).toBe(200);
      // The keys command works beside the running server.
      const out: string[] = [];
      expect(await runKeysCli(['create', '--plan', 'pro'], env, (l) => out.push(l))).toBe(0);
      expect(await runKeysCli(['rotate-master'], env, (l) => out.push(l))).toBe(EXIT.dataDirLocked);
      expect(out.join('\n')).toContain('only while no server runs');
    } finally {
      expect((await stop(first)).code).toBe(0);
    }
    // Once the first is gone (however it ended), the lock is gone with it.
    const third = await start(env);
    expect(third.port).not.toBeNull();
    expect((await stop(third)).code).toBe(0);
  });

  it('refuses a bad configuration with a clear message', async () => {
    const res = await stop(await start({ DATA_DIR: join(dir, 'data2'), PORT: 'eighty' }));
    expect(res.code).toBe(78);
    expect(res.out).toContain('Configuration error: PORT');
  });
});

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/** Starts `npm start`'s entry point, waits until it listens, stops it with SIGTERM; returns its output. */
async function startAndStop(env: Record<string, string>): Promise<{ out: string; code: number | null }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'main.ts')], { env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  for (let i = 0; i < 300 && !out.includes('backup service listening'); i++) {
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGTERM');
  return { out, code: await exited };
}

describe('npm start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'main-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints a development key on the first start only, and keeps its secrets 0600', async () => {
    const env = { DATA_DIR: join(dir, 'data'), BACKUP_ALLOWED_ROOTS: dir };
    const first = await startAndStop(env);
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/api_key: key_[0-9A-Z]{26}\n\s+secret:\s+sk_/);
    const second = await startAndStop(env);
    expect(second.code).toBe(0);
    expect(second.out).not.toContain('api_key:');
    for (const name of ['token-signing-key', 'repository-password']) {
      expect(statSync(join(dir, 'data', 'secrets', name)).mode & 0o777).toBe(0o600);
    }
  });

  it('refuses a bad configuration with a clear message', async () => {
    const res = await startAndStop({ DATA_DIR: join(dir, 'data2'), PORT: 'eighty' });
    expect(res.code).toBe(78);
    expect(res.out).toContain('Configuration error: PORT');
  });
});

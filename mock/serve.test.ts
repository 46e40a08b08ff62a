// `npm run mock` as a process: it prints where it listens, answers, and stops cleanly on SIGTERM.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('npm run mock', () => {
  it('serves both APIs on the given ports and exits 0 on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('./serve.ts', import.meta.url)), '--backup-port', '0', '--tools-port', '0', '--quiet'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const urls = await new Promise<{ backup: string; tools: string }>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const backup = /Backup API mock:\s+(\S+)/.exec(output)?.[1];
        const tools = /Public tools mock:\s+(\S+)/.exec(output)?.[1];
        if (backup && tools) resolve({ backup, tools });
      });
      child.once('exit', (code) => reject(new Error(`mock exited (${code}): ${output}`)));
    });
    expect(urls.backup).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    const status = await fetch(`${urls.backup}/status`);
    expect(status.status).toBe(200);
    const ip = await fetch(`${urls.tools}/api/tools/ip-info`);
    expect(ip.status).toBe(200);

    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).toBe(0);
    await expect(fetch(`${urls.backup}/status`)).rejects.toThrow();
  });
});

import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'dev-cert-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function devCert(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [join(ROOT, 'scripts', 'dev-cert.ts'), ...args], { cwd: dir, env: { ...process.env, DATA_DIR: join(dir, 'data'), ...env }, encoding: 'utf8' });
}

/** Whether a client trusting only `ca` accepts `cert` for `servername` in a real handshake. */
async function trusted(cert: Buffer, key: Buffer, ca: Buffer, servername: string, host: string): Promise<boolean> {
  const server = createServer({ cert, key }, (s) => s.end());
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  try {
    return await new Promise<boolean>((resolve) => {
      const socket = connect({ host, port: (server.address() as { port: number }).port, ca, servername }, () => {
        resolve(socket.authorized);
        socket.end();
      });
      socket.on('error', () => resolve(false));
    });
  } finally {
    server.close();
  }
}

describe('npm run dev-cert', () => {
  const out = join(dir, 'certs');

  it('makes a local CA and a localhost / 127.0.0.1 certificate it signs, keys 0600', async () => {
    const run = devCert(['--dir', out]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('TLS_CERT_FILE=');
    expect(run.stdout).toContain('NODE_EXTRA_CA_CERTS=');
    for (const key of ['ca-key.pem', 'localhost-key.pem']) expect(statSync(join(out, key)).mode & 0o777).toBe(0o600);
    const ca = readFileSync(join(out, 'ca.pem'));
    const cert = readFileSync(join(out, 'localhost.pem'));
    const key = readFileSync(join(out, 'localhost-key.pem'));
    const leaf = new X509Certificate(cert);
    expect(leaf.checkIssued(new X509Certificate(ca))).toBe(true);
    expect(leaf.subjectAltName).toContain('DNS:localhost');
    expect(leaf.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(await trusted(cert, key, ca, 'localhost', '127.0.0.1')).toBe(true);
    // A name it was not issued for is refused by the same client.
    expect(await trusted(cert, key, ca, 'backup.company.internal', '127.0.0.1')).toBe(false);
  });

  it('keeps the CA on a second run and issues a new server certificate', () => {
    const ca = readFileSync(join(out, 'ca.pem'), 'utf8');
    const serial = new X509Certificate(readFileSync(join(out, 'localhost.pem'))).serialNumber;
    const run = devCert(['--dir', out]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Reused the local CA');
    expect(readFileSync(join(out, 'ca.pem'), 'utf8')).toBe(ca);
    expect(new X509Certificate(readFileSync(join(out, 'localhost.pem'))).serialNumber).not.toBe(serial);
  });

  it('refuses a directory inside DATA_DIR', () => {
    const run = devCert(['--dir', join(dir, 'data', 'tls')]);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/is inside DATA_DIR .* choose a directory outside it/);
  });
});

import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa, issueCertificate, type Ca, type Issued } from '../../scripts/dev-cert/pki.ts';
import { httpsRequest } from '../testing/https-client.ts';
import { startServerProcess } from '../testing/processes.ts';

const dir = mkdtempSync(join(tmpdir(), 'tls-start-'));
let ca: Ca;
let one: Issued;
let two: Issued;
const env = (extra: Record<string, string>) => ({ DATA_DIR: join(dir, 'data'), BACKUP_ALLOWED_ROOTS: dir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...extra });

beforeAll(() => {
  ca = createCa(dir);
  one = issueCertificate({ ca, dir, name: 'one', serial: 'D001' });
  two = issueCertificate({ ca, dir, name: 'two', serial: 'D002' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm start refuses to start insecurely', () => {
  it.each<[string, () => Record<string, string>, () => string]>([
    ['a key that does not match the certificate', () => ({ TLS_CERT_FILE: one.cert, TLS_KEY_FILE: two.key }), () => `Configuration error: TLS_KEY_FILE ${two.key}: the key does not match the certificate in TLS_CERT_FILE ${one.cert}`],
    ['a missing certificate file', () => ({ TLS_CERT_FILE: join(dir, 'nope.pem'), TLS_KEY_FILE: one.key }), () => `Configuration error: TLS_CERT_FILE ${join(dir, 'nope.pem')}: cannot be read (no such file)`],
    ['a non-loopback HOST without TLS', () => ({ HOST: '0.0.0.0' }), () => 'Configuration error: HOST=0.0.0.0 would serve plain HTTP beyond this machine'],
  ])('exits non-zero at once with %s, saying what is wrong', async (_what, extra, message) => {
    const started = Date.now();
    const server = startServerProcess(env(extra()));
    expect(await server.exited).toBe(78);
    expect(server.output()).toContain(message());
    expect(server.output()).not.toContain('listening');
    // Refused before any listening or retrying; the bound leaves room for a loaded machine.
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});

describe('npm start over TLS', () => {
  it('reloads the certificate on SIGHUP at once', async () => {
    const live = { cert: join(dir, 'live.pem'), key: join(dir, 'live-key.pem') };
    copyFileSync(one.cert, live.cert);
    copyFileSync(one.key, live.key);
    const server = startServerProcess(env({ TLS_CERT_FILE: live.cert, TLS_KEY_FILE: live.key, DATA_DIR: join(dir, 'data-hup') }));
    try {
      const port = await server.listening();
      const caPem = readFileSync(ca.cert);
      const status = () => httpsRequest(`https://127.0.0.1:${port}/api/v1/status`, { ca: caPem });
      expect((await status()).serial).toBe('D001');
      copyFileSync(two.cert, `${live.cert}.new`);
      copyFileSync(two.key, `${live.key}.new`);
      renameSync(`${live.cert}.new`, live.cert);
      renameSync(`${live.key}.new`, live.key);
      server.child.kill('SIGHUP');
      let serial = 'D001';
      for (let i = 0; i < 40 && serial !== 'D002'; i++) {
        await sleep(100);
        serial = (await status()).serial;
      }
      expect(serial).toBe('D002');
      // Loaded because of the signal, not the periodic check.
      expect(server.output()).toMatch(/"reason":"SIGHUP".*"serial":"D002".*TLS certificate reloaded/);
    } finally {
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    }
  });
});

import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as tlsConnect, createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa, issueCertificate, type Ca, type Issued } from '../../scripts/dev-cert/pki.ts';
import { createLogger } from '../http/logger.ts';
import { HSTS } from '../http/https-policy.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { httpsRequest } from '../testing/https-client.ts';

const dir = mkdtempSync(join(tmpdir(), 'https-'));
const live = { cert: join(dir, 'live.pem'), key: join(dir, 'live-key.pem') };
let ca: Ca;
let first: Issued;
let caPem: string;

/** Puts a pair in place the way a renewal tool does: each file written aside, then renamed over. */
function install(pair: { cert: string; key: string }): void {
  copyFileSync(pair.cert, `${live.cert}.new`);
  copyFileSync(pair.key, `${live.key}.new`);
  renameSync(`${live.cert}.new`, live.cert);
  renameSync(`${live.key}.new`, live.key);
}

/** What a TLS client with at most `maxVersion` gets from `port`: the protocol, or the handshake error code. */
function handshake(port: number, options: { maxVersion: 'TLSv1.1' | 'TLSv1.3'; minVersion: 'TLSv1' | 'TLSv1.2' }): Promise<string> {
  return new Promise((resolve) => {
    // SECLEVEL=0 lets this OpenSSL offer TLS 1.1 at all, so a refusal comes from the server.
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: caPem, servername: 'localhost', ciphers: 'DEFAULT@SECLEVEL=0', ...options }, () => {
      resolve(socket.getProtocol() ?? 'none');
      socket.end();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/**
 * A POST over a fresh TLS connection whose head is sent now and body only on finish(): a request
 * in flight for as long as the test wants. Resolves with the status and the certificate served.
 */
async function postHeadFirst(path: string, body: string): Promise<{ finish(): Promise<{ status: number; serial: string }> }> {
  const socket = tlsConnect({ host: '127.0.0.1', port: port(), ca: caPem, servername: 'localhost' });
  await new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
  socket.write(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`);
  const serial = socket.getPeerCertificate().serialNumber.toUpperCase();
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString()));
  const closed = new Promise<void>((resolve, reject) => socket.once('end', resolve).once('error', reject));
  return {
    async finish() {
      socket.write(body);
      await closed;
      return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]), serial };
    },
  };
}

const logLines: string[] = [];
const logSink = new Writable({
  write(chunk: Buffer, _enc, done) {
    logLines.push(...chunk.toString().split('\n').filter(Boolean));
    done();
  },
});

let h: Harness;
const port = () => Number(new URL(h.base).port);
const get = (path: string, extra: Parameters<typeof httpsRequest>[1] | object = {}) => httpsRequest(h.base + path, { ca: caPem, ...extra });

beforeAll(async () => {
  ca = createCa(dir);
  caPem = readFileSync(ca.cert, 'utf8');
  first = issueCertificate({ ca, dir, name: 'first', serial: 'A001' });
  install(first);
  h = await startHarness({ TLS_CERT_FILE: live.cert, TLS_KEY_FILE: live.key }, { logger: createLogger('info', logSink) });
});
afterAll(async () => {
  await h?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('the server over TLS', () => {
  it('answers TLS 1.3 with the certificate the test CA issued, with HSTS on every response', async () => {
    const status = await get('/api/v1/status', { minVersion: 'TLSv1.3' });
    expect(status).toMatchObject({ status: 200, protocol: 'TLSv1.3', serial: 'A001' });
    expect(status.headers['strict-transport-security']).toBe(HSTS);
    const notFound = await get('/api/v1/nope');
    expect(notFound.status).toBe(404);
    expect(notFound.headers['strict-transport-security']).toBe(HSTS);
    const unauthorized = await get('/api/v1/backup');
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers['strict-transport-security']).toBe(HSTS);
  });

  it('answers TLS 1.2 as well', async () => {
    expect((await get('/api/tools/ip-info', { maxVersion: 'TLSv1.2' })).protocol).toBe('TLSv1.2');
  });

  it('refuses a TLS 1.1-only client in the handshake', async () => {
    // The same client completes a TLS 1.1 handshake with a server that allows it...
    const permissive: TlsServer = createTlsServer({ cert: readFileSync(first.cert), key: readFileSync(first.key), minVersion: 'TLSv1', ciphers: 'DEFAULT@SECLEVEL=0' }, (s) => s.end());
    await new Promise<void>((resolve) => permissive.listen(0, '127.0.0.1', resolve));
    try {
      expect(await handshake((permissive.address() as { port: number }).port, { minVersion: 'TLSv1', maxVersion: 'TLSv1.1' })).toBe('TLSv1.1');
    } finally {
      permissive.close();
    }
    // ...and gets the server's protocol_version alert from this one.
    expect(await handshake(port(), { minVersion: 'TLSv1', maxVersion: 'TLSv1.1' })).toBe('ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');
  });

  it('gives plain HTTP on the TLS port no API response', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = netConnect({ host: '127.0.0.1', port: port() }, () => socket.write('GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
      let got = '';
      socket.on('data', (d) => (got += d.toString('latin1')));
      socket.on('close', () => resolve(got));
      socket.on('error', () => resolve(got));
      socket.setTimeout(5000, () => socket.destroy());
    });
    expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
    expect(answer).not.toContain('"success"');
  });

  it('reports the certificate expiry in /status', async () => {
    const status = await get('/api/v1/status');
    const notAfter = new Date(new X509Certificate(readFileSync(first.cert)).validTo);
    expect(status.body.data.checks.certificate).toEqual({ status: 'ok', latency_ms: expect.any(Number), expires_at: notAfter.toISOString() });
    expect(status.body.data.status).toBe('ok');
  });

  it('rotates: within 10 s new connections get the new certificate, a request begun before finishes on the old', async () => {
    const second = issueCertificate({ ca, dir, name: 'second', serial: 'B002' });
    // A request in flight across the swap: head sent on an old-certificate connection, body later.
    const slow = await postHeadFirst('/api/newsletter/subscribe', JSON.stringify({ email: 'rotation@example.com', source: 'tls-test' }));

    install(second);
    const swapped = Date.now();
    let serial = 'A001';
    while (serial !== 'B002' && Date.now() - swapped < 10_000) {
      await sleep(200);
      serial = (await get('/api/v1/status')).serial;
    }
    expect(serial).toBe('B002');
    expect(Date.now() - swapped).toBeLessThan(10_000);
    expect(await slow.finish()).toEqual({ status: 201, serial: 'A001' });
    expect(logLines.some((l) => l.includes('TLS certificate reloaded') && l.includes('"serial":"B002"'))).toBe(true);
  });

  it('keeps the current certificate when the new pair does not load, and says so once', async () => {
    const current = (await get('/api/v1/status')).serial;
    const stranger = issueCertificate({ ca, dir, name: 'stranger', serial: 'C003' });
    // A renewed certificate with a key that is not its own.
    const errorsBefore = logLines.filter((l) => l.includes('new TLS certificate not loaded')).length;
    install({ cert: stranger.cert, key: first.key });
    let logged: string[] = [];
    for (let i = 0; i < 50 && logged.length === 0; i++) {
      await sleep(200);
      logged = logLines.filter((l) => l.includes('new TLS certificate not loaded')).slice(errorsBefore);
    }
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain(`TLS_KEY_FILE ${live.key}: the key does not match the certificate in TLS_CERT_FILE ${live.cert}`);
    expect(JSON.parse(logged[0]!).level).toBe(50);
    expect((await get('/api/v1/status')).serial).toBe(current);
    // The next check sees the same broken files: nothing new to say, nothing changes.
    expect(await h.service.services.certificate!.reload('files changed')).toBe(false);
    expect(logLines.filter((l) => l.includes('new TLS certificate not loaded')).slice(errorsBefore)).toHaveLength(1);
    expect((await get('/api/v1/status')).serial).toBe(current);
  });
});

describe('certificate expiry in /status', () => {
  it('turns degraded within 14 days of expiry', async () => {
    const soon = issueCertificate({ ca, dir, name: 'soon', days: 7 });
    const s = await startHarness({ TLS_CERT_FILE: soon.cert, TLS_KEY_FILE: soon.key });
    try {
      const status = await httpsRequest(`${s.base}/api/v1/status`, { ca: caPem });
      expect(status.body.data.status).toBe('degraded');
      expect(status.body.data.checks.certificate.status).toBe('failed');
      expect(status.body.data.checks.database.status).toBe('ok');
    } finally {
      await s.cleanup();
    }
  });
});

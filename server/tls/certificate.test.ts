import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa, issueCertificate, type Ca, type Issued } from '../../scripts/dev-cert/pki.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { CertificateError, loadCertificatePair } from './certificate.ts';

const dir = mkdtempSync(join(tmpdir(), 'tls-cert-'));
let ca: Ca;
let good: Issued;
let other: Issued;
beforeAll(() => {
  ca = createCa(dir);
  good = issueCertificate({ ca, dir, name: 'good', serial: '1001' });
  other = issueCertificate({ ca, dir, name: 'other', serial: '1002' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const refused = (certFile: string, keyFile: string): string => {
  try {
    loadCertificatePair({ certFile, keyFile });
  } catch (err) {
    expect(err).toBeInstanceOf(CertificateError);
    return (err as Error).message;
  }
  throw new Error('the pair loaded');
};

describe('loadCertificatePair', () => {
  it('loads a matching pair, leaf first, with or without its chain', () => {
    const pair = loadCertificatePair({ certFile: good.cert, keyFile: good.key });
    expect(pair.serial).toBe('1001');
    expect(pair.notAfter.getTime()).toBeGreaterThan(Date.now() + 300 * 86_400_000);
    const chained = issueCertificate({ ca, dir, name: 'chained', withChain: true });
    expect(readFileSync(chained.cert, 'utf8').match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    expect(loadCertificatePair({ certFile: chained.cert, keyFile: chained.key }).serial).toBe(chained.serial);
  });

  it('names the file and the problem for each kind of bad pair', () => {
    expect(refused(join(dir, 'missing.pem'), good.key)).toBe(`TLS_CERT_FILE ${join(dir, 'missing.pem')}: cannot be read (no such file)`);
    expect(refused(good.cert, join(dir, 'missing-key.pem'))).toMatch(/^TLS_KEY_FILE .*missing-key\.pem: cannot be read \(no such file\)$/);
    expect(refused(dir, good.key)).toMatch(/^TLS_CERT_FILE .*: cannot be read \(is a directory\)$/);

    const text = join(dir, 'not-pem.txt');
    writeFileSync(text, 'hello, not a certificate\n');
    expect(refused(text, good.key)).toMatch(/^TLS_CERT_FILE .*not-pem\.txt: no PEM certificate in it/);
    expect(refused(good.cert, text)).toMatch(/^TLS_KEY_FILE .*not-pem\.txt: no PEM private key in it/);

    const garbled = join(dir, 'garbled.pem');
    writeFileSync(garbled, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    expect(refused(garbled, good.key)).toMatch(/^TLS_CERT_FILE .*garbled\.pem: certificate 1 is not valid PEM\/X\.509/);

    expect(refused(good.cert, other.key)).toBe(`TLS_KEY_FILE ${other.key}: the key does not match the certificate in TLS_CERT_FILE ${good.cert} (the leaf must come first)`);
    // The chain in the wrong order: the CA first.
    const reversed = join(dir, 'reversed.pem');
    writeFileSync(reversed, readFileSync(ca.cert, 'utf8') + readFileSync(good.cert, 'utf8'));
    expect(refused(reversed, good.key)).toMatch(/does not match the certificate/);

    const expired = issueCertificate({ ca, dir, name: 'expired', notBefore: new Date('2024-01-01T00:00:00Z'), notAfter: new Date('2024-03-01T00:00:00Z') });
    expect(refused(expired.cert, expired.key)).toBe(`TLS_CERT_FILE ${expired.cert}: the certificate expired on 2024-03-01T00:00:00.000Z`);
    const future = issueCertificate({ ca, dir, name: 'future', notBefore: new Date(Date.now() + 86_400_000 * 2), days: 30 });
    expect(refused(future.cert, future.key)).toMatch(/is not valid before/);

    const encrypted = join(dir, 'encrypted-key.pem');
    execFileSync('openssl', ['pkey', '-in', good.key, '-out', encrypted, '-aes256', '-passout', 'pass:secret']);
    expect(refused(good.cert, encrypted)).toMatch(/^TLS_KEY_FILE .*encrypted with a passphrase/);

  });
});

describe('TLS and HOST settings', () => {
  const base = { DATA_DIR: join(dir, 'data') };

  it('listens on 127.0.0.1 by default, plain HTTP', () => {
    const c = loadConfig(base);
    expect(c.host).toBe('127.0.0.1');
    expect(c.tls).toBeNull();
  });

  it('takes a pair that loads, paths resolved against the working directory', () => {
    const c = loadConfig({ ...base, TLS_CERT_FILE: 'good.pem', TLS_KEY_FILE: 'good-key.pem', HOST: '0.0.0.0' }, dir);
    expect(c.tls).toEqual({ certFile: good.cert, keyFile: good.key });
    expect(c.host).toBe('0.0.0.0');
  });

  it('refuses a pair that does not load, or half a pair, naming the variable', () => {
    expect(() => loadConfig({ ...base, TLS_CERT_FILE: good.cert, TLS_KEY_FILE: other.key })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, TLS_CERT_FILE: good.cert, TLS_KEY_FILE: other.key })).toThrow(/^TLS_KEY_FILE .* does not match/);
    expect(() => loadConfig({ ...base, TLS_CERT_FILE: good.cert })).toThrow('TLS_CERT_FILE and TLS_KEY_FILE must be set together (only TLS_CERT_FILE is set)');
  });

  it.each(['127.0.0.1', '127.0.0.2', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1'])('serves plain HTTP on loopback HOST=%s', (host) => {
    expect(loadConfig({ ...base, HOST: host }).host).toBe(host);
  });

  it.each(['0.0.0.0', '::', '192.0.2.10', 'backup.company.internal', '2001:db8::1'])('refuses plain HTTP on HOST=%s, naming the ways out', (host) => {
    expect(() => loadConfig({ ...base, HOST: host })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, HOST: host })).toThrow(/set TLS_CERT_FILE and TLS_KEY_FILE .* or set TRUST_PROXY to the TLS-terminating proxy/);
  });

  it('allows a non-loopback HOST behind a trusted TLS-terminating proxy', () => {
    expect(loadConfig({ ...base, HOST: '0.0.0.0', TRUST_PROXY: '10.0.0.5' }).host).toBe('0.0.0.0');
  });
});

import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { addressKey, clientAddress, clientKey, parseTrustProxy } from './client-address.ts';
import type { TrustProxySetting } from './client-address.ts';

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** An app that answers with what it thinks the client is, listening on `host`. */
async function serve(trust: TrustProxySetting, host: string): Promise<number> {
  const app = express();
  app.set('trust proxy', trust);
  app.get('/who', (req, res) => {
    res.json({ address: clientAddress(req), key: clientKey(req) });
  });
  const server = app.listen(0, host);
  servers.push(server);
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** GET /who from the loopback address `host`, with an optional X-Forwarded-For. */
function who(host: string, port: number, forwardedFor?: string): Promise<{ address: string; key: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host, port, path: '/who', headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {} },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve(JSON.parse(body) as { address: string; key: string }));
      },
    );
    req.on('error', reject);
  });
}

describe('clientAddress over real loopback HTTP', () => {
  it('uses the socket and ignores X-Forwarded-For when no proxy is trusted', async () => {
    const port = await serve(parseTrustProxy(undefined), '127.0.0.1');
    expect(await who('127.0.0.1', port)).toEqual({ address: '127.0.0.1', key: '127.0.0.1' });
    expect((await who('127.0.0.1', port, '203.0.113.9')).address).toBe('127.0.0.1');
    expect((await who('127.0.0.1', port, '203.0.113.9, 198.51.100.1')).address).toBe('127.0.0.1');
  });

  it('uses the socket over IPv6 loopback', async () => {
    const port = await serve(false, '::1');
    expect(await who('::1', port, '203.0.113.9')).toEqual({ address: '::1', key: '::/56' });
  });

  it('turns an IPv4-mapped socket address into IPv4', async () => {
    const port = await serve(false, '::ffff:127.0.0.1');
    expect((await who('127.0.0.1', port)).address).toBe('127.0.0.1');
  });

  it('walks X-Forwarded-For through trusted proxies only', async () => {
    const port = await serve(parseTrustProxy('loopback'), '127.0.0.1');
    expect((await who('127.0.0.1', port, '203.0.113.9')).address).toBe('203.0.113.9');
    // A client forging the left of the header gains nothing: the nearest untrusted hop counts.
    expect((await who('127.0.0.1', port, '10.9.9.9, 203.0.113.9')).address).toBe('203.0.113.9');
    // Without the header the socket is the client.
    expect((await who('127.0.0.1', port)).address).toBe('127.0.0.1');
  });

  it('trusts a CIDR list that names the proxy, and nothing when it does not', async () => {
    const trusting = await serve(parseTrustProxy('10.0.0.0/8, 127.0.0.0/8'), '127.0.0.1');
    expect((await who('127.0.0.1', trusting, '203.0.113.9')).address).toBe('203.0.113.9');
    const other = await serve(parseTrustProxy('10.0.0.0/8, fd00::/8'), '127.0.0.1');
    expect((await who('127.0.0.1', other, '203.0.113.9')).address).toBe('127.0.0.1');
  });

  it('trusts a hop count', async () => {
    const port = await serve(parseTrustProxy('2'), '127.0.0.1');
    // Socket (hop 0) and 198.51.100.1 (hop 1) are trusted; the next one is the client.
    expect((await who('127.0.0.1', port, '192.0.2.1, 203.0.113.9, 198.51.100.1')).address).toBe('203.0.113.9');
  });

  it('normalizes what a trusted proxy writes: mapped, ports, brackets, IPv6 spelling', async () => {
    const port = await serve(parseTrustProxy('loopback'), '127.0.0.1');
    expect((await who('127.0.0.1', port, '::ffff:203.0.113.9')).address).toBe('203.0.113.9');
    expect((await who('127.0.0.1', port, '203.0.113.9:51234')).address).toBe('203.0.113.9');
    expect((await who('127.0.0.1', port, '[2001:DB8:0:0::7]:443')).address).toBe('2001:db8::7');
    // Garbage from a proxy falls back to the socket address.
    expect((await who('127.0.0.1', port, 'unknown')).address).toBe('127.0.0.1');
  });

  it('keys IPv6 clients by /56', async () => {
    const port = await serve(parseTrustProxy('loopback'), '127.0.0.1');
    const a = await who('127.0.0.1', port, '2001:db8:abcd:1200::1');
    const b = await who('127.0.0.1', port, '2001:db8:abcd:12ff:ffff:ffff:ffff:ffff');
    const c = await who('127.0.0.1', port, '2001:db8:abcd:1300::1');
    expect(a.key).toBe('2001:db8:abcd:1200::/56');
    expect(b.key).toBe(a.key);
    expect(c.key).toBe('2001:db8:abcd:1300::/56');
  });
});

describe('addressKey', () => {
  it.each([
    ['203.0.113.9', '203.0.113.9'],
    ['2001:db8:1:2345:3:4:5:6', '2001:db8:1:2300::/56'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1::/56'],
    ['2001:db8:1:2ff::', '2001:db8:1:200::/56'],
    ['::1', '::/56'],
    ['unknown', 'unknown'],
  ])('%s -> %s', (address, key) => {
    expect(addressKey(address)).toBe(key);
  });
});

describe('parseTrustProxy', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['  ', false],
    ['false', false],
    ['FALSE', false],
    ['0', false],
    ['true', true],
    ['1', 1],
    ['3', 3],
    ['loopback', ['loopback']],
    ['loopback, uniquelocal', ['loopback', 'uniquelocal']],
    ['10.0.0.0/8,fd00::/8, 192.0.2.7', ['10.0.0.0/8', 'fd00::/8', '192.0.2.7']],
  ] as const)('%j -> %j', (raw, setting) => {
    expect(parseTrustProxy(raw)).toEqual(setting);
  });

  it.each(['yes', 'bogus', '10.0.0.0/33', 'loopback,', '1.2.3', '-1'])('refuses %j', (raw) => {
    expect(() => parseTrustProxy(raw)).toThrow(/TRUST_PROXY/);
  });
});

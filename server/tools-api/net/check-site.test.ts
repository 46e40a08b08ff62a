/**
 * check-site against loopback listeners only. Every refusal is proven twice: the prober throws
 * URL_NOT_ALLOWED, and the listener it must not reach saw no connection at all. Host names are
 * literals, `localhost` (never sent to a resolver) or resolved by an injected resolver, so no
 * DNS query leaves the machine.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { FormatsPlugin } from 'ajv-formats';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.ts';
import { checkSite as runCheck } from './check-site.ts';
import type { CheckSiteOptions, CheckSiteResult } from './check-site.ts';
import { onlyTargets, targetPolicy } from './target-policy.ts';
import type { TargetPolicy } from './target-policy.ts';

// Every result must satisfy the contract's SiteCheck schema (the bundled tools document).
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(JSON.parse(readFileSync(new URL('../../../generated/tools.openapi.json', import.meta.url), 'utf8')) as object, 'tools');
const siteCheckSchema = ajv.getSchema('tools#/components/schemas/SiteCheck')!;

async function checkSite(input: string, options: CheckSiteOptions): Promise<CheckSiteResult> {
  const result = await runCheck(input, options);
  expect(siteCheckSchema(result), JSON.stringify(siteCheckSchema.errors)).toBe(true);
  return result;
}

const CERT = readFileSync(new URL('./fixtures/loopback-cert.pem', import.meta.url));
const KEY = readFileSync(new URL('./fixtures/loopback-key.pem', import.meta.url));

interface Listener {
  address: string;
  port: number;
  /** TCP connections accepted. */
  connections: number;
  /** Bytes received (plain listeners only). */
  bytes: number;
  /** Request lines seen. */
  requests: string[];
  /** Sockets closed by the peer or ended. */
  closed: number;
  origin: string;
}

const servers: net.Server[] = [];
const sockets = new Set<net.Socket>();

/** Keeps track of a server and its connections so that teardown never waits on one. */
function track<S extends net.Server>(server: S): S {
  servers.push(server);
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return server;
}

afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen(
  handler: http.RequestListener,
  options: { address?: string; port?: number; tls?: boolean } = {},
): Promise<Listener> {
  const address = options.address ?? '127.0.0.1';
  const server = options.tls ? https.createServer({ cert: CERT, key: KEY }, handler) : http.createServer(handler);
  const listener: Listener = { address, port: 0, connections: 0, bytes: 0, requests: [], closed: 0, origin: '' };
  server.on('connection', (socket: net.Socket) => {
    listener.connections++;
    if (!options.tls) socket.on('data', (d: Buffer) => (listener.bytes += d.length));
    socket.on('close', () => listener.closed++);
  });
  server.on('request', (req: http.IncomingMessage) => listener.requests.push(`${req.method} ${req.url}`));
  track(server).listen(options.port ?? 0, address);
  await once(server, 'listening');
  listener.port = (server.address() as net.AddressInfo).port;
  const host = address.includes(':') ? `[${address}]` : address;
  listener.origin = `${options.tls ? 'https' : 'http'}://${host}:${listener.port}`;
  return listener;
}

/** A raw TCP listener that accepts and never answers. */
async function silent(): Promise<Listener> {
  const listener: Listener = { address: '127.0.0.1', port: 0, connections: 0, bytes: 0, requests: [], closed: 0, origin: '' };
  const server = track(
    net.createServer((socket) => {
      listener.connections++;
      socket.on('data', (d) => (listener.bytes += d.length));
    }),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  listener.port = (server.address() as net.AddressInfo).port;
  listener.origin = `http://127.0.0.1:${listener.port}`;
  return listener;
}

const ok: http.RequestListener = (_req, res) => {
  res.end('fine');
};

const redirectTo =
  (location: string, status = 302): http.RequestListener =>
  (_req, res) => {
    res.writeHead(status, { Location: location }).end();
  };

/** Lets any connection the prober might have made reach the listener before counting. */
const settle = () => new Promise((r) => setTimeout(r, 50));

async function refusal(input: string, options: CheckSiteOptions): Promise<ApiError> {
  const err = await checkSite(input, options).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe('URL_NOT_ALLOWED');
  expect((err as ApiError).status).toBe(422);
  return err as ApiError;
}

const only = (...listeners: Listener[]): TargetPolicy => onlyTargets(listeners);

describe('check-site refuses loopback however it is spelled (default policy)', () => {
  it.each([
    'http://127.0.0.1:PORT/',
    'http://127.0.0.2:PORT/',
    'http://2130706433:PORT/',
    'http://0x7f000001:PORT/',
    'http://0x7F.0.0.1:PORT/',
    'http://127.1:PORT/',
    'http://0177.0.0.1:PORT/',
    'http://017700000001:PORT/',
    'http://127.0.0.1.:PORT/',
    'http://%31%32%37.0.0.1:PORT/',
    'http://[::ffff:127.0.0.1]:PORT/',
    'http://[0:0:0:0:0:ffff:7f00:1]:PORT/',
    'http://[::127.0.0.1]:PORT/',
    'http://[::1]:PORT/',
    'http://[0:0:0:0:0:0:0:1]:PORT/',
    'http://localhost:PORT/',
    'http://localhost.:PORT/',
    'http://LOCALHOST:PORT/',
    'http://api.localhost:PORT/',
    'http://0.0.0.0:PORT/',
    'http://0:PORT/',
    'http://[::]:PORT/',
    'https://127.0.0.1:PORT/',
  ])('%s', async (template) => {
    const v4 = await listen(ok);
    const v6 = await listen(ok, { address: '::1', port: v4.port });
    const input = template.replace('PORT', String(v4.port));
    await refusal(input, { policy: targetPolicy() });
    await settle();
    expect(v4.connections).toBe(0);
    expect(v6.connections).toBe(0);
  });

  it('refuses a name that resolves only to refused addresses, and asks the resolver once', async () => {
    const target = await listen(ok);
    const asked: string[] = [];
    const err = await refusal(`http://rebind.test:${target.port}/`, {
      policy: targetPolicy(),
      resolve: async (host) => {
        asked.push(host);
        return ['127.0.0.1', '::ffff:127.0.0.1'];
      },
    });
    expect(err.details).toEqual({ url: `http://rebind.test:${target.port}/` });
    expect(asked).toEqual(['rebind.test']);
    await settle();
    expect(target.connections).toBe(0);
  });
});

describe('check-site with one allowed loopback listener', () => {
  it('answers up for 200, having read only the headers of an endless body', async () => {
    let written = 0;
    const site = await listen((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      const timer = setInterval(() => {
        if (res.destroyed) return clearInterval(timer);
        res.write(Buffer.alloc(64 * 1024));
        written++;
      }, 5);
      res.on('close', () => clearInterval(timer));
    });
    const result = await checkSite(`${site.origin}/health?x=1`, { policy: only(site) });
    expect(result).toMatchObject({ url: `${site.origin}/health?x=1`, status: 'up', http_status: 200, reason: null });
    expect(result.response_time_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(result.checked_at)).not.toBeNaN();
    expect(site.requests).toEqual(['GET /health?x=1']);
    await settle();
    // The prober hung up at once: the server saw the socket close while still streaming.
    expect(site.closed).toBe(1);
    expect(written).toBeLessThan(20);
  });

  it.each([
    [204, 'up', null],
    [301, 'up', null], // a redirect without Location is a final answer
    [404, 'down', 'HTTP_ERROR'],
    [500, 'down', 'HTTP_ERROR'],
    [503, 'down', 'HTTP_ERROR'],
  ] as const)('HTTP %i -> %s', async (code, status, reason) => {
    const site = await listen((_req, res) => {
      res.writeHead(code).end();
    });
    const result = await checkSite(`${site.origin}/`, { policy: only(site) });
    expect(result).toMatchObject({ status, http_status: code, reason });
  });

  it('works over IPv6 loopback and with the address spelled as mapped IPv6', async () => {
    const v6 = await listen(ok, { address: '::1' });
    expect((await checkSite(`http://[::1]:${v6.port}/`, { policy: only(v6) })).status).toBe('up');
    const v4 = await listen(ok);
    const mapped = await checkSite(`http://[::ffff:127.0.0.1]:${v4.port}/`, { policy: only(v4) });
    expect(mapped.status).toBe('up');
    expect(v4.requests).toHaveLength(1);
  });

  it('resolves localhost itself, and with a trailing dot', async () => {
    const site = await listen(ok);
    expect((await checkSite(`http://localhost.:${site.port}/`, { policy: only(site) })).status).toBe('up');
    expect((await checkSite(`http://localhost:${site.port}/`, { policy: only(site) })).status).toBe('up');
  });

  it('connects only to the allowed one of several resolved addresses', async () => {
    const allowed = await listen(ok);
    const other = await listen(ok, { address: '::1', port: allowed.port });
    const result = await checkSite(`http://mixed.test:${allowed.port}/`, {
      policy: only(allowed),
      resolve: async () => ['::1', '127.0.0.1'],
    });
    expect(result.status).toBe('up');
    expect(allowed.requests).toEqual(['GET /']);
    await settle();
    expect(other.connections).toBe(0);
  });

  it('checks the address actually connected to before writing a byte', async () => {
    const site = await silent();
    // Allows the address when it is resolved, refuses it when the socket is checked.
    let asked = 0;
    const policy: TargetPolicy = { allows: () => ++asked === 1 };
    await refusal(`${site.origin}/`, { policy });
    expect(asked).toBe(2);
    await settle();
    expect(site.connections).toBe(1);
    expect(site.bytes).toBe(0);
  });
});

describe('check-site redirects', () => {
  it('follows up to 5 redirects, each one checked', async () => {
    const site = await listen((req, res) => {
      const n = Number((req.url ?? '/0').slice(1));
      if (n < 5) res.writeHead(n % 2 ? 301 : 307, { Location: `/${n + 1}` }).end();
      else res.end('arrived');
    });
    const result = await checkSite(`${site.origin}/0`, { policy: only(site) });
    expect(result).toMatchObject({ status: 'up', http_status: 200, reason: null, url: `${site.origin}/0` });
    expect(site.requests).toEqual(['GET /0', 'GET /1', 'GET /2', 'GET /3', 'GET /4', 'GET /5']);
  });

  it('gives up after the fifth redirect', async () => {
    const site = await listen((req, res) => {
      const n = Number((req.url ?? '/0').slice(1));
      res.writeHead(302, { Location: `/${n + 1}` }).end();
    });
    const result = await checkSite(`${site.origin}/0`, { policy: only(site) });
    expect(result).toMatchObject({ status: 'down', http_status: 302, reason: 'TOO_MANY_REDIRECTS' });
    expect(site.requests).toHaveLength(6);
  });

  it.each([
    'http://127.0.0.1:OTHER/secret',
    'http://[::ffff:127.0.0.1]:OTHER/',
    'http://2130706433:OTHER/',
    'http://localhost:OTHER/',
    'http://0:OTHER/',
  ])('refuses a hop to another loopback listener: %s', async (template) => {
    const other = await listen(ok);
    const hop = template.replace('OTHER', String(other.port));
    const first = await listen(redirectTo(hop));
    const err = await refusal(`${first.origin}/start`, { policy: only(first) });
    expect(err.details).toEqual({ url: new URL(hop).href });
    expect(first.requests).toEqual(['GET /start']);
    await settle();
    expect(other.connections).toBe(0);
  });

  it.each(['ftp://127.0.0.1/', 'file:///etc/passwd', 'gopher://127.0.0.1:70/', 'http://127.0.0.1:0/'])(
    'refuses a hop with a refused scheme or port: %s',
    async (hop) => {
      const first = await listen(redirectTo(hop));
      const err = await refusal(`${first.origin}/`, { policy: only(first) });
      expect(err.details).toEqual({ url: hop });
    },
  );

  it('refuses a hop to a name that resolves to a refused address', async () => {
    const other = await listen(ok);
    const first = await listen(redirectTo(`http://evil.test:${other.port}/`));
    await refusal(`${first.origin}/`, { policy: only(first), resolve: async () => ['127.0.0.1'] });
    await settle();
    expect(other.connections).toBe(0);
  });

  it('takes a redirect without a usable Location as the final answer', async () => {
    const first = await listen(redirectTo('http://[zz/'));
    const result = await checkSite(`${first.origin}/`, { policy: only(first) });
    expect(result).toMatchObject({ status: 'up', http_status: 302, reason: null });
  });
});

describe('check-site failures', () => {
  it('reports a refused connection', async () => {
    const gone = await listen(ok);
    const port = gone.port;
    for (const socket of sockets) socket.destroy();
    await new Promise((r) => servers.pop()!.close(r));
    const result = await checkSite(`http://127.0.0.1:${port}/`, { policy: onlyTargets([{ address: '127.0.0.1', port }]) });
    expect(result).toMatchObject({ status: 'down', http_status: null, reason: 'CONNECTION_REFUSED' });
  });

  it('reports a timeout when nothing answers within the limit', async () => {
    const site = await silent();
    const result = await checkSite(`${site.origin}/`, { policy: only(site), timeoutMs: 300 });
    expect(result).toMatchObject({ status: 'down', http_status: null, reason: 'TIMEOUT' });
    expect(result.response_time_ms).toBeGreaterThanOrEqual(290);
  });

  it('reports a DNS failure', async () => {
    const result = await checkSite('http://no-such-host.test/', {
      policy: targetPolicy(),
      resolve: async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND no-such-host.test'), { code: 'ENOTFOUND' });
      },
    });
    expect(result).toMatchObject({ status: 'down', http_status: null, reason: 'DNS_FAILURE' });
  });

  it('reports a TLS failure (untrusted certificate) and succeeds when the CA is trusted', async () => {
    const site = await listen(ok, { tls: true });
    const untrusted = await checkSite(`${site.origin}/`, { policy: only(site) });
    expect(untrusted).toMatchObject({ status: 'down', http_status: null, reason: 'TLS_ERROR' });
    const trusted = await checkSite(`https://localhost:${site.port}/`, { policy: only(site), ca: CERT });
    expect(trusted).toMatchObject({ status: 'up', http_status: 200 });
  });

  it('reports a TLS failure when the name does not match the certificate', async () => {
    const site = await listen(ok, { tls: true });
    const result = await checkSite(`https://wrong-name.test:${site.port}/`, {
      policy: only(site),
      ca: CERT,
      resolve: async () => ['127.0.0.1'],
    });
    expect(result.reason).toBe('TLS_ERROR');
  });

  it('reports a response that is not HTTP', async () => {
    const server = track(net.createServer((socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n\r\n')));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as net.AddressInfo).port;
    const result = await checkSite(`http://127.0.0.1:${port}/`, { policy: onlyTargets([{ address: '127.0.0.1', port }]) });
    expect(result).toMatchObject({ status: 'down', http_status: null, reason: 'CONNECTION_RESET' });
  });
});

describe('check-site input', () => {
  it.each([
    'ftp://127.0.0.1/',
    'file:///etc/passwd',
    'javascript:alert(1)',
    'data:text/plain,hi',
    'ws://127.0.0.1/',
    'example.com',
    '/relative',
    'http://',
    'http://127.0.0.1:65536/',
    'http://user:secret@127.0.0.1/',
    'http://user@127.0.0.1/',
    '',
  ])('rejects %j as not an absolute http(s) URL without user information', async (input) => {
    const site = await listen(ok);
    const err = await checkSite(input.replace('127.0.0.1/', `127.0.0.1:${site.port}/`), {
      policy: targetPolicy({ allowPrivate: true }),
    }).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe('VALIDATION_ERROR');
    expect((err as ApiError).details).toMatchObject({ errors: [{ path: '/body/url' }] });
    await settle();
    expect(site.connections).toBe(0);
  });

  it('reports the URL as sent', async () => {
    const site = await listen(ok);
    const input = `HTTP://LocalHost:${site.port}/a/../b?q=1#frag`;
    const result = await checkSite(input, { policy: only(site) });
    expect(result.url).toBe(input);
    expect(site.requests).toEqual(['GET /b?q=1']);
  });

  it('allows loopback with allowPrivate (CHECK_SITE_ALLOW_PRIVATE), never link-local or metadata', async () => {
    const site = await listen(ok);
    const policy = targetPolicy({ allowPrivate: true });
    expect((await checkSite(`${site.origin}/`, { policy })).status).toBe('up');
    // Classified, never dialled:
    for (const address of ['169.254.169.254', 'fe80::1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '240.0.0.1']) {
      expect(policy.allows(address, 80)).toBe(false);
    }
    for (const address of ['10.0.0.1', '192.168.1.1', '100.64.0.1', 'fd00::1', '127.0.0.1', '::1']) {
      expect(policy.allows(address, 80)).toBe(true);
      expect(targetPolicy().allows(address, 80)).toBe(false);
    }
  });
});

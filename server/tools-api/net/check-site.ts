/**
 * check-site: is a website up? The prober resolves the host itself, keeps only the addresses the
 * policy allows, connects to one of them by its literal address, checks the socket's peer
 * address again before a single byte is written, and only then speaks HTTP (TLS for https) over
 * that socket. A name can therefore never be re-resolved to somewhere else between check and
 * use (DNS rebinding), and every redirect hop goes through the same steps.
 *
 * Only the status line and headers are read; the socket is destroyed without reading the body.
 */
import { Resolver as DnsResolver } from 'node:dns/promises';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { ApiError } from '../../http/errors.ts';
import { normalizeAddress } from './address.ts';
import type { TargetPolicy } from './target-policy.ts';

/** The `reason` enum of the SiteCheck schema. */
export type CheckSiteReason =
  | 'DNS_FAILURE'
  | 'CONNECTION_REFUSED'
  | 'CONNECTION_RESET'
  | 'TIMEOUT'
  | 'TLS_ERROR'
  | 'HTTP_ERROR'
  | 'TOO_MANY_REDIRECTS';

export interface CheckSiteResult {
  /** The URL checked, as sent. */
  url: string;
  status: 'up' | 'down';
  /** The status of the last response, or null when none arrived. */
  http_status: number | null;
  /** From the start of the check to the last response's headers (or the failure), at most the timeout. */
  response_time_ms: number;
  checked_at: string;
  /** Why the site is down; null when it is up. */
  reason: CheckSiteReason | null;
}

/** Resolves a host name to addresses (rejects when it does not resolve). */
export type Resolver = (hostname: string, signal: AbortSignal) => Promise<string[]>;

export interface CheckSiteOptions {
  policy: TargetPolicy;
  resolve?: Resolver;
  /** Whole check, all hops included (default 10 s). */
  timeoutMs?: number;
  /** Redirects followed at most (default 5). */
  maxRedirects?: number;
  /** Extra trusted certificate authorities (tests). */
  ca?: string | Buffer;
  /** DNS servers for the default resolver ("address" or "address:port"); default: the system's. */
  dnsServers?: string[];
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = 'BackupService-SiteCheck/1.0';

/**
 * The default resolver asks DNS directly (c-ares: A and AAAA in parallel) rather than through
 * getaddrinfo, which runs on libuv's small thread pool and cannot be cancelled: slow names
 * must not hold up the file-system work of the backup engine that shares that pool.
 */
function dnsResolver(servers: string[] | undefined): Resolver {
  return (hostname, signal) => resolveBoth(hostname, signal, servers);
}

async function resolveBoth(hostname: string, signal: AbortSignal, servers: string[] | undefined): Promise<string[]> {
  const resolver = new DnsResolver({ timeout: 3000, tries: 2 });
  if (servers) resolver.setServers(servers);
  const cancel = () => resolver.cancel();
  signal.addEventListener('abort', cancel, { once: true });
  try {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
    if (addresses.length === 0) throw v4.status === 'rejected' ? v4.reason : new Error(`no address for ${hostname}`);
    return addresses;
  } finally {
    signal.removeEventListener('abort', cancel);
  }
}

/** A failure that makes the site `down`. */
class Down extends Error {
  readonly reason: CheckSiteReason;
  readonly httpStatus: number | null;
  constructor(reason: CheckSiteReason, httpStatus: number | null = null) {
    super(reason);
    this.reason = reason;
    this.httpStatus = httpStatus;
  }
}

function notAllowed(url: URL): ApiError {
  return new ApiError('URL_NOT_ALLOWED', 'This URL may not be checked: its scheme, port or address is not allowed.', {
    url: url.href,
  });
}

/** RFC 6761: "localhost" and names under it are loopback; they are never sent to a resolver. */
function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

function targetPort(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** Scheme and port of a hop; throws URL_NOT_ALLOWED. */
function checkUrl(url: URL): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw notAllowed(url);
  const port = targetPort(url);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw notAllowed(url);
}

/** The addresses of the hop's host that the policy allows; throws URL_NOT_ALLOWED when none. */
async function allowedAddresses(url: URL, options: CheckSiteOptions, signal: AbortSignal): Promise<string[]> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let candidates: string[];
  if (net.isIP(host)) candidates = [host];
  else if (isLocalhostName(host)) candidates = ['127.0.0.1', '::1'];
  else {
    try {
      candidates = await abortable((options.resolve ?? dnsResolver(options.dnsServers))(host, signal), signal);
    } catch {
      if (signal.aborted) throw new Down('TIMEOUT');
      throw new Down('DNS_FAILURE');
    }
    if (candidates.length === 0) throw new Down('DNS_FAILURE');
  }
  const port = targetPort(url);
  const allowed = candidates.filter((a) => {
    const normalized = normalizeAddress(a);
    return normalized !== null && options.policy.allows(normalized, port);
  });
  if (allowed.length === 0) throw notAllowed(url);
  return allowed;
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}


/**
 * A TCP connection to `address`, verified against the policy on the address actually
 * connected to before it is returned; nothing is written to the socket before that.
 */
function connectChecked(address: string, port: number, policy: TargetPolicy, url: URL, signal: AbortSignal): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: address, port, noDelay: true });
    const onAbort = () => {
      socket.destroy();
      reject(new Down('TIMEOUT'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    // Failing to connect at all (refused, host or network unreachable).
    socket.on('error', () => {
      signal.removeEventListener('abort', onAbort);
      reject(new Down('CONNECTION_REFUSED'));
    });
    socket.once('connect', () => {
      signal.removeEventListener('abort', onAbort);
      const peer = normalizeAddress(socket.remoteAddress ?? '');
      if (peer === null || !policy.allows(peer, socket.remotePort ?? port)) {
        socket.destroy();
        reject(notAllowed(url));
        return;
      }
      resolve(socket);
    });
  });
}

function startTls(socket: net.Socket, url: URL, options: CheckSiteOptions, signal: AbortSignal): Promise<tls.TLSSocket> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
  return new Promise((resolve, reject) => {
    const secure = tls.connect({
      socket,
      servername: net.isIP(host) ? undefined : host,
      ALPNProtocols: ['http/1.1'],
      ...(options.ca ? { ca: options.ca } : {}),
    });
    const onAbort = () => {
      secure.destroy();
      reject(new Down('TIMEOUT'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    secure.on('error', () => {
      signal.removeEventListener('abort', onAbort);
      secure.destroy();
      reject(new Down('TLS_ERROR'));
    });
    secure.once('secureConnect', () => {
      signal.removeEventListener('abort', onAbort);
      resolve(secure);
    });
  });
}

/** Connects to the first allowed address that answers. */
async function openConnection(url: URL, options: CheckSiteOptions, signal: AbortSignal): Promise<net.Socket> {
  const addresses = await allowedAddresses(url, options, signal);
  const port = targetPort(url);
  let lastError: unknown;
  for (const address of addresses) {
    let socket: net.Socket;
    try {
      socket = await connectChecked(address, port, options.policy, url, signal);
    } catch (err) {
      if (!(err instanceof Down) || err.reason === 'TIMEOUT') throw err;
      lastError = err;
      continue;
    }
    return url.protocol === 'https:' ? startTls(socket, url, options, signal) : socket;
  }
  throw lastError ?? new Down('CONNECTION_REFUSED');
}

interface Head {
  status: number;
  location: string | undefined;
}

/** Sends GET over the socket and resolves with the status line and Location, then closes the socket. */
function requestHead(socket: net.Socket, url: URL, signal: AbortSignal): Promise<Head> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      method: 'GET',
      path: `${url.pathname}${url.search}`,
      headers: { Host: url.host, 'User-Agent': USER_AGENT, Accept: '*/*', Connection: 'close' },
      setHost: false,
      // With no `agent` option Node uses this socket as it is (agent: false would ignore it).
      createConnection: () => socket,
    });
    const onAbort = () => {
      req.destroy();
      socket.destroy();
      reject(new Down('TIMEOUT'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    req.once('response', (res) => {
      signal.removeEventListener('abort', onAbort);
      const location = res.headers.location;
      res.destroy();
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, location });
    });
    // Connected, but no valid status line: reset, hang-up, or a reply that is not HTTP.
    req.on('error', () => {
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      reject(new Down('CONNECTION_RESET'));
    });
    req.end();
  });
}

function invalidUrl(message: string): ApiError {
  return new ApiError('VALIDATION_ERROR', 'The request is not valid.', { errors: [{ path: '/body/url', message }] });
}

/** The URL sent: absolute http(s), without user information (as the request schema says). */
function parseInput(input: string): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw invalidUrl('must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidUrl('must be an absolute http or https URL');
  if (url.username !== '' || url.password !== '') throw invalidUrl('must not contain user information');
  return url;
}

function followable(location: string | undefined, base: URL): URL | null {
  if (location === undefined) return null;
  try {
    return new URL(location, base);
  } catch {
    return null;
  }
}

/**
 * Checks `input` (an absolute http or https URL). Resolves with the result, up or down; throws
 * ApiError URL_NOT_ALLOWED (details.url = the refused URL or redirect hop) when the URL or any
 * redirect hop has port 0 or an address the policy refuses, or a redirect leads to another
 * scheme; VALIDATION_ERROR when the input is not an absolute http(s) URL or has user information.
 */
export async function checkSite(input: string, options: CheckSiteOptions): Promise<CheckSiteResult> {
  const first = parseInput(input);
  const checkedAt = new Date();
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? 10_000;
  const timeout = AbortSignal.timeout(timeoutMs);
  const maxRedirects = options.maxRedirects ?? 5;
  const result = (status: 'up' | 'down', httpStatus: number | null, reason: CheckSiteReason | null): CheckSiteResult => ({
    url: input,
    status,
    http_status: httpStatus,
    response_time_ms: Math.min(timeoutMs, Math.round(performance.now() - started)),
    checked_at: checkedAt.toISOString(),
    reason,
  });

  let url = first;
  try {
    for (let redirects = 0; ; redirects++) {
      checkUrl(url);
      const socket = await openConnection(url, options, timeout);
      const head = await requestHead(socket, url, timeout);
      // A redirect without a usable Location is a final answer.
      const next = REDIRECTS.has(head.status) ? followable(head.location, url) : null;
      if (next) {
        if (redirects === maxRedirects) throw new Down('TOO_MANY_REDIRECTS', head.status);
        url = next;
        continue;
      }
      if (head.status >= 200 && head.status < 400) return result('up', head.status, null);
      if (head.status >= 400 && head.status < 600) return result('down', head.status, 'HTTP_ERROR');
      return result('down', null, 'CONNECTION_RESET');
    }
  } catch (err) {
    if (err instanceof Down) return result('down', err.httpStatus, err.reason);
    throw err;
  }
}

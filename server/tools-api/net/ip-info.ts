/**
 * ip-info: what the server sees of the caller. Reverse DNS is asked only for public addresses
 * (a private or loopback address has no meaningful public name, and asking would leak it to the
 * resolver), with a short timeout, and the name is reported only when it resolves back to the
 * same address (forward-confirmed), since anyone controlling a reverse zone can write any name.
 */
import { Resolver } from 'node:dns/promises';
import { classifyAddress, normalizeAddress } from './address.ts';
import type { AddressScope } from './address.ts';

/** The `scope` enum of the IpInfo schema: the classifier's finer scopes fold into `reserved`. */
export type IpInfoScope = 'public' | 'private' | 'loopback' | 'link_local' | 'cgnat' | 'reserved';

export function ipInfoScope(scope: AddressScope): IpInfoScope {
  switch (scope) {
    case 'public':
    case 'private':
    case 'loopback':
    case 'link_local':
    case 'cgnat':
      return scope;
    default:
      return 'reserved';
  }
}

export interface IpInfo {
  ip: string;
  version: 4 | 6;
  scope: IpInfoScope;
  hostname: string | null;
  user_agent: string | null;
}

/** The DNS operations ip-info needs; the default is a c-ares resolver with one try. */
export interface NameLookup {
  reverse(ip: string): Promise<string[]>;
  forward(hostname: string, version: 4 | 6): Promise<string[]>;
  /** Abandon outstanding queries (after a timeout). */
  cancel?(): void;
}

export interface IpInfoOptions {
  /** Makes the lookup for one call; tests inject one that never leaves the process. */
  lookup?: (timeoutMs: number) => NameLookup;
  /** Whole reverse + forward lookup (default 1000 ms). */
  timeoutMs?: number;
  /** Remembers answers; default: a shared cache when the system's DNS is used, none otherwise. */
  cache?: HostnameCache;
}

/**
 * Definite answers (a confirmed name, or none) per address for `ttlMs`, at most `maxEntries`
 * (oldest dropped first), so a client calling ip-info repeatedly costs one lookup, not one each.
 * Timeouts and resolver failures are not remembered.
 */
export class HostnameCache {
  readonly #entries = new Map<string, { hostname: string | null; expires: number }>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: { ttlMs?: number; maxEntries?: number; now?: () => number } = {}) {
    this.#ttlMs = options.ttlMs ?? 10 * 60_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  get(ip: string): string | null | undefined {
    const entry = this.#entries.get(ip);
    if (!entry) return undefined;
    if (entry.expires <= this.#now()) {
      this.#entries.delete(ip);
      return undefined;
    }
    return entry.hostname;
  }

  set(ip: string, hostname: string | null): void {
    this.#entries.delete(ip);
    this.#entries.set(ip, { hostname, expires: this.#now() + this.#ttlMs });
    while (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }
}

const sharedCache = new HostnameCache();

/** "No such name" answers are definite; anything else (SERVFAIL, refused, timeout) may pass. */
const DEFINITE_MISS = new Set(['ENOTFOUND', 'ENODATA']);

/** Longest User-Agent echoed back; longer ones are cut. */
export const USER_AGENT_MAX = 512;

const HOSTNAME = /^(?=.{1,253}$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)*$/i;

function systemLookup(timeoutMs: number): NameLookup {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  return {
    reverse: (ip) => resolver.reverse(ip),
    forward: (hostname, version) => (version === 4 ? resolver.resolve4(hostname) : resolver.resolve6(hostname)),
    cancel: () => resolver.cancel(),
  };
}

/** Resolves with the confirmed name or null; rejects when the resolver failed (not definite). */
async function confirmedHostname(ip: string, version: 4 | 6, lookup: NameLookup): Promise<string | null> {
  const definite = <T>(promise: Promise<T[]>): Promise<T[]> =>
    promise.catch((err: unknown) => {
      if (DEFINITE_MISS.has((err as NodeJS.ErrnoException).code ?? '')) return [];
      throw err;
    });
  for (const name of (await definite(lookup.reverse(ip))).slice(0, 3)) {
    const hostname = name.replace(/\.$/, '').toLowerCase();
    if (!HOSTNAME.test(hostname)) continue;
    const addresses = await definite(lookup.forward(hostname, version));
    if (addresses.some((a) => normalizeAddress(a) === ip)) return hostname;
  }
  return null;
}

/** The public name of a public address, or null (not public, no name, not confirmed, timeout, error). */
export async function reverseHostname(ip: string, options: IpInfoOptions = {}): Promise<string | null> {
  const normalized = normalizeAddress(ip);
  if (normalized === null || classifyAddress(normalized) !== 'public') return null;
  const cache = options.cache ?? (options.lookup ? undefined : sharedCache);
  const cached = cache?.get(normalized);
  if (cached !== undefined) return cached;
  const version = normalized.includes(':') ? 6 : 4;
  const timeoutMs = options.timeoutMs ?? 1000;
  const lookup = (options.lookup ?? systemLookup)(timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      lookup.cancel?.();
      resolve(undefined);
    }, timeoutMs);
  });
  const answer = confirmedHostname(normalized, version, lookup).then(
    (hostname) => {
      cache?.set(normalized, hostname);
      return hostname;
    },
    () => undefined,
  );
  try {
    return (await Promise.race([answer, timeout])) ?? null;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The ip-info answer for a client address (as clientAddress() gives it) and its User-Agent.
 * Throws on a string that is not an IP address.
 */
export async function buildIpInfo(address: string, userAgent: string | undefined, options: IpInfoOptions = {}): Promise<IpInfo> {
  const ip = normalizeAddress(address);
  if (ip === null) throw new Error(`not an IP address: ${address}`);
  const ua = userAgent?.trim() ?? '';
  return {
    ip,
    version: ip.includes(':') ? 6 : 4,
    scope: ipInfoScope(classifyAddress(ip)!),
    hostname: await reverseHostname(ip, options),
    user_agent: ua === '' ? null : ua.slice(0, USER_AGENT_MAX),
  };
}

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
}

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

async function confirmedHostname(ip: string, version: 4 | 6, lookup: NameLookup): Promise<string | null> {
  for (const name of (await lookup.reverse(ip)).slice(0, 3)) {
    const hostname = name.replace(/\.$/, '').toLowerCase();
    if (!HOSTNAME.test(hostname)) continue;
    const addresses = await lookup.forward(hostname, version);
    if (addresses.some((a) => normalizeAddress(a) === ip)) return hostname;
  }
  return null;
}

/** The public name of a public address, or null (not public, no name, not confirmed, timeout, error). */
export async function reverseHostname(ip: string, options: IpInfoOptions = {}): Promise<string | null> {
  const normalized = normalizeAddress(ip);
  if (normalized === null || classifyAddress(normalized) !== 'public') return null;
  const version = normalized.includes(':') ? 6 : 4;
  const timeoutMs = options.timeoutMs ?? 1000;
  const lookup = (options.lookup ?? systemLookup)(timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => {
      lookup.cancel?.();
      resolve(null);
    }, timeoutMs);
  });
  try {
    return await Promise.race([confirmedHostname(normalized, version, lookup).catch(() => null), timeout]);
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

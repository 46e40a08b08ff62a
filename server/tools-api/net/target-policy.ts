/** Which addresses check-site may connect to (the SSRF policy). */
import { classifyAddress, normalizeAddress } from './address.ts';
import type { AddressScope } from './address.ts';

export interface TargetPolicy {
  /** Whether a connection to `address` (normalized: IPv4-mapped IPv6 as IPv4) and `port` may be made. */
  allows(address: string, port: number): boolean;
}

/** Scopes allowed with CHECK_SITE_ALLOW_PRIVATE=true: never link-local (cloud metadata), multicast, reserved. */
const PRIVATE_SCOPES: ReadonlySet<AddressScope> = new Set(['public', 'private', 'loopback', 'cgnat']);

/**
 * The production policy: public addresses only; with `allowPrivate` (an operator setting for
 * tests on loopback, off by default) also private, loopback and CGNAT addresses.
 */
export function targetPolicy(options: { allowPrivate?: boolean } = {}): TargetPolicy {
  return {
    allows(address: string): boolean {
      const scope = classifyAddress(address);
      if (scope === null) return false;
      return options.allowPrivate ? PRIVATE_SCOPES.has(scope) : scope === 'public';
    },
  };
}

/** A policy that allows exactly the listed address:port pairs (tests on loopback listeners). */
export function onlyTargets(targets: ReadonlyArray<{ address: string; port: number }>): TargetPolicy {
  const allowed = new Set(targets.map((t) => `${normalizeAddress(t.address) ?? t.address}|${t.port}`));
  return { allows: (address, port) => allowed.has(`${normalizeAddress(address) ?? address}|${port}`) };
}

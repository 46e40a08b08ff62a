/**
 * The client address of a request: the socket's peer unless the operator trusts proxies
 * (TRUST_PROXY → Express "trust proxy"), in which case Express walks X-Forwarded-For from the
 * socket back through trusted hops only. A forged X-Forwarded-For is ignored otherwise.
 */
import express from 'express';
import type { Request } from 'express';
import { formatIPv4, formatIPv6, normalizeAddress, parseAddress } from '../tools-api/net/address.ts';

/** A value Express accepts for its "trust proxy" setting. */
export type TrustProxySetting = boolean | number | string[];

/**
 * TRUST_PROXY → Express "trust proxy":
 * - unset, empty, `false`, `0` → false (socket address only, the default);
 * - `true` → trust every hop (only safe behind a proxy that overwrites X-Forwarded-For);
 * - an integer N → trust the N nearest hops;
 * - otherwise a comma-separated list of addresses, CIDR ranges and the names `loopback`,
 *   `linklocal`, `uniquelocal` (e.g. `loopback, 10.0.0.0/8, fd00::/8`).
 * Throws on anything Express would not accept, so a typo stops the server at start.
 */
export function parseTrustProxy(raw: string | undefined): TrustProxySetting {
  const value = (raw ?? '').trim();
  if (value === '' || /^false$/i.test(value)) return false;
  if (/^true$/i.test(value)) return true;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (!Number.isSafeInteger(hops)) throw new Error(`TRUST_PROXY hop count is out of range: "${raw}"`);
    return hops === 0 ? false : hops;
  }
  const list = value.split(',').map((entry) => entry.trim());
  if (list.some((entry) => entry === '')) throw new Error(`TRUST_PROXY has an empty entry: "${raw}"`);
  try {
    // Express compiles the list on set (through proxy-addr) and throws on a bad entry.
    express().set('trust proxy', list);
  } catch (err) {
    throw new Error(`TRUST_PROXY is not valid: "${raw}" (${(err as Error).message})`);
  }
  return list;
}

/** An address as a proxy may write it in X-Forwarded-For: with a port, or bracketed. */
function stripPort(text: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) return bracketed[1]!;
  const v4WithPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(text);
  if (v4WithPort) return v4WithPort[1]!;
  return text;
}

/**
 * The normalized client address (IPv4-mapped IPv6 as IPv4, IPv6 in RFC 5952 form). When a
 * trusted proxy sent something that is not an address, the socket's peer is used instead.
 */
export function clientAddress(req: Request): string {
  const known = untrustedPeers.get(req.socket);
  if (known !== undefined) return known;
  const fromExpress = req.ip === undefined ? null : normalizeAddress(stripPort(req.ip.trim()));
  const peer = req.socket.remoteAddress;
  const address = fromExpress ?? (peer && normalizeAddress(peer)) ?? 'unknown';
  // A peer that is not a trusted proxy is the client of every request of its connection.
  if (peer !== undefined && !peerIsTrustedProxy(req)) untrustedPeers.set(req.socket, address);
  return address;
}

/** Whether the connection's peer is a trusted proxy (TRUST_PROXY), as Express judges it. */
export function peerIsTrustedProxy(req: Request): boolean {
  return (req.app.get('trust proxy fn') as (address: string, hop: number) => boolean)(req.socket.remoteAddress ?? '', 0);
}

/** The client address of connections whose peer is no trusted proxy. */
const untrustedPeers = new WeakMap<object, string>();

/**
 * The rate-limit key of an address: the address itself for IPv4, its /56 prefix for IPv6
 * (one customer site usually gets a /56 or /48, so counting single IPv6 addresses would let
 * one client rotate through billions of them).
 */
export function addressKey(address: string): string {
  const parsed = parseAddress(address);
  if (!parsed) return address;
  if (parsed.version === 4) return formatIPv4(parsed.bytes);
  const prefix = new Uint8Array(16);
  prefix.set(parsed.bytes.subarray(0, 7));
  return `${formatIPv6(prefix)}/56`;
}

/** The rate-limit key of a request's client. */
export function clientKey(req: Request): string {
  return addressKey(clientAddress(req));
}

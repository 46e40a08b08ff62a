/**
 * Plain HTTP is served on loopback only. The listen address decides at start (a non-loopback
 * HOST without TLS refuses to start unless a TLS-terminating proxy is trusted), and the socket's
 * peer decides per request (see http/https-policy.ts).
 */
import type { TrustProxySetting } from '../http/client-address.ts';
import { mappedIPv4, parseAddress } from '../tools-api/net/address.ts';

/** 127.0.0.0/8, ::1 and their IPv4-mapped form; nothing else (no 6to4 or Teredo look-alikes). */
export function isLoopback(address: string): boolean {
  const parsed = parseAddress(address);
  if (!parsed) return false;
  const v4 = parsed.version === 4 ? parsed.bytes : mappedIPv4(parsed.bytes);
  if (v4) return v4[0] === 127;
  return parsed.bytes.every((b, i) => b === (i === 15 ? 1 : 0));
}

/** Whether HOST is a loopback listen address (`localhost` included). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  return bare.toLowerCase() === 'localhost' || isLoopback(bare);
}

/** Throws (naming the ways out) when the server would serve plain HTTP beyond loopback. */
export function assertPlainHttpOnLoopback(settings: { host: string; tls: unknown; trustProxy: TrustProxySetting }): void {
  if (settings.tls || settings.trustProxy !== false || isLoopbackHost(settings.host)) return;
  throw new Error(
    `HOST=${settings.host} would serve plain HTTP beyond this machine, and only HTTPS is served there. ` +
      'Either set TLS_CERT_FILE and TLS_KEY_FILE (npm run dev-cert makes a pair for development), ' +
      'or set TRUST_PROXY to the TLS-terminating proxy in front of the server (e.g. TRUST_PROXY=10.0.0.5), ' +
      'or listen on loopback (HOST=127.0.0.1, the default).',
  );
}

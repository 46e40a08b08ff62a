/**
 * IP address parsing and classification: which scope an address belongs to, and whether the
 * public tools may connect to it (the SSRF policy of check-site).
 *
 * Parsing is strict: dotted-quad IPv4 (no leading zeros, no short or numeric forms; URL hosts
 * are normalised by the WHATWG URL parser before they get here) and RFC 4291 IPv6 text, with an
 * optional zone id (`%eth0`) that is ignored.
 */

export type AddressScope =
  | 'public'
  | 'private'
  | 'loopback'
  | 'link_local'
  | 'cgnat'
  | 'multicast'
  | 'unspecified'
  | 'broadcast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved';

export interface ParsedAddress {
  version: 4 | 6;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
}

const IPV4_PART = /^(0|[1-9][0-9]{0,2})$/;

export function parseIPv4(text: string): Uint8Array | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i]!;
    if (!IPV4_PART.test(part)) return null;
    const n = Number(part);
    if (n > 255) return null;
    bytes[i] = n;
  }
  return bytes;
}

const HEXTET = /^[0-9a-fA-F]{1,4}$/;

export function parseIPv6(input: string): Uint8Array | null {
  let text = input;
  const zone = text.indexOf('%');
  if (zone !== -1) {
    if (zone === text.length - 1) return null;
    text = text.slice(0, zone);
  }
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const halves = text.split('::');
  if (halves.length > 2) return null;

  const words: number[][] = [];
  for (let h = 0; h < halves.length; h++) {
    const half = halves[h]!;
    const out: number[] = [];
    if (half !== '') {
      const groups = half.split(':');
      for (let i = 0; i < groups.length; i++) {
        const group = groups[i]!;
        if (i === groups.length - 1 && h === halves.length - 1 && group.includes('.')) {
          const v4 = parseIPv4(group);
          if (!v4) return null;
          out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
        } else {
          if (!HEXTET.test(group)) return null;
          out.push(parseInt(group, 16));
        }
      }
    }
    words.push(out);
  }

  let all: number[];
  if (words.length === 1) {
    all = words[0]!;
    if (all.length !== 8) return null;
  } else {
    const head = words[0]!;
    const tail = words[1]!;
    const missing = 8 - head.length - tail.length;
    if (missing < 1) return null;
    all = [...head, ...new Array<number>(missing).fill(0), ...tail];
  }
  const bytes = new Uint8Array(16);
  all.forEach((word, i) => {
    bytes[i * 2] = word >> 8;
    bytes[i * 2 + 1] = word & 0xff;
  });
  return bytes;
}

export function parseAddress(text: string): ParsedAddress | null {
  const v4 = parseIPv4(text);
  if (v4) return { version: 4, bytes: v4 };
  const v6 = parseIPv6(text);
  if (v6) return { version: 6, bytes: v6 };
  return null;
}

export function formatIPv4(bytes: Uint8Array): string {
  return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
}

/** RFC 5952 text: lower case, no leading zeros, the longest run (≥ 2) of zero words as `::`. */
export function formatIPv6(bytes: Uint8Array): string {
  const words: number[] = [];
  for (let i = 0; i < 16; i += 2) words.push((bytes[i]! << 8) | bytes[i + 1]!);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (bestLen < 2) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** The IPv4 address carried in an IPv4-mapped IPv6 address (::ffff:a.b.c.d), else null. */
export function mappedIPv4(bytes: Uint8Array): Uint8Array | null {
  if (bytes.length !== 16) return null;
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return null;
  if (bytes[10] !== 0xff || bytes[11] !== 0xff) return null;
  return bytes.slice(12);
}

/**
 * The canonical text of an address: IPv4 dotted quad (IPv4-mapped IPv6 becomes IPv4),
 * IPv6 in RFC 5952 form without zone id. Null when the text is not an address.
 */
export function normalizeAddress(text: string): string | null {
  const parsed = parseAddress(text);
  if (!parsed) return null;
  if (parsed.version === 4) return formatIPv4(parsed.bytes);
  const v4 = mappedIPv4(parsed.bytes);
  return v4 ? formatIPv4(v4) : formatIPv6(parsed.bytes);
}

interface Range {
  prefix: Uint8Array;
  bits: number;
  scope: AddressScope;
}

function range(cidr: string, scope: AddressScope): Range {
  const [addr, bits] = cidr.split('/') as [string, string];
  const parsed = parseAddress(addr);
  if (!parsed) throw new Error(`bad range ${cidr}`);
  return { prefix: parsed.bytes, bits: Number(bits), scope };
}

function inRange(bytes: Uint8Array, r: Range): boolean {
  if (bytes.length !== r.prefix.length) return false;
  let bits = r.bits;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i]! & mask) !== (r.prefix[i]! & mask)) return false;
  }
  return true;
}

/** IANA IPv4 Special-Purpose Address Registry (most specific first). */
const IPV4_RANGES: Range[] = [
  range('255.255.255.255/32', 'broadcast'),
  range('0.0.0.0/8', 'unspecified'),
  range('10.0.0.0/8', 'private'),
  range('100.64.0.0/10', 'cgnat'),
  range('127.0.0.0/8', 'loopback'),
  range('169.254.0.0/16', 'link_local'),
  range('172.16.0.0/12', 'private'),
  range('192.0.0.0/24', 'reserved'),
  range('192.0.2.0/24', 'documentation'),
  range('192.88.99.0/24', 'reserved'),
  range('192.168.0.0/16', 'private'),
  range('198.18.0.0/15', 'benchmarking'),
  range('198.51.100.0/24', 'documentation'),
  range('203.0.113.0/24', 'documentation'),
  range('224.0.0.0/4', 'multicast'),
  range('240.0.0.0/4', 'reserved'),
];

/** IANA IPv6 Special-Purpose Address Registry, apart from the IPv4-embedding ranges. */
const IPV6_RANGES: Range[] = [
  range('::/128', 'unspecified'),
  range('::1/128', 'loopback'),
  range('64:ff9b:1::/48', 'private'),
  range('100::/64', 'reserved'),
  range('2001:2::/48', 'benchmarking'),
  range('2001:db8::/32', 'documentation'),
  range('2001::/23', 'reserved'),
  range('3fff::/20', 'documentation'),
  range('5f00::/16', 'reserved'),
  range('fc00::/7', 'private'),
  range('fe80::/10', 'link_local'),
  range('fec0::/10', 'reserved'),
  range('ff00::/8', 'multicast'),
];

const V4_MAPPED = range('::ffff:0:0/96', 'reserved');
const V4_TRANSLATED = range('::ffff:0:0:0/96', 'reserved');
const V4_COMPATIBLE = range('::/96', 'reserved');
const NAT64 = range('64:ff9b::/96', 'reserved');
const TEREDO = range('2001::/32', 'reserved');
const SIX_TO_FOUR = range('2002::/16', 'reserved');
const GLOBAL_UNICAST = range('2000::/3', 'public');

function classifyIPv4(bytes: Uint8Array): AddressScope {
  for (const r of IPV4_RANGES) if (inRange(bytes, r)) return r.scope;
  return 'public';
}

/** The IPv4 address an IPv6 address carries and is routed by, if any. */
export function embeddedIPv4(bytes: Uint8Array): Uint8Array | null {
  if (bytes.length !== 16) return null;
  if (inRange(bytes, V4_MAPPED) || inRange(bytes, V4_TRANSLATED) || inRange(bytes, NAT64)) {
    return bytes.slice(12);
  }
  // ::/96 without :: and ::1 (those are classified on their own).
  if (inRange(bytes, V4_COMPATIBLE) && ((bytes[12]! | bytes[13]! | bytes[14]!) !== 0 || bytes[15]! > 1)) {
    return bytes.slice(12);
  }
  // Teredo: the client's address is the last 32 bits, inverted.
  if (inRange(bytes, TEREDO)) return bytes.slice(12).map((b) => b ^ 0xff);
  // 6to4: 2002:AABB:CCDD::/48.
  if (inRange(bytes, SIX_TO_FOUR)) return bytes.slice(2, 6);
  return null;
}

function classifyIPv6(bytes: Uint8Array): AddressScope {
  const v4 = embeddedIPv4(bytes);
  if (v4) return classifyIPv4(v4);
  for (const r of IPV6_RANGES) if (inRange(bytes, r)) return r.scope;
  // Only 2000::/3 is allocated for global unicast.
  return inRange(bytes, GLOBAL_UNICAST) ? 'public' : 'reserved';
}

/**
 * The scope of an address; null when the text is not an IP address. IPv6 addresses that embed
 * an IPv4 address (mapped, compatible, translated, NAT64, 6to4, Teredo) are judged on it.
 */
export function classifyAddress(text: string): AddressScope | null {
  const parsed = parseAddress(text);
  if (!parsed) return null;
  return parsed.version === 4 ? classifyIPv4(parsed.bytes) : classifyIPv6(parsed.bytes);
}

/** True only for a valid address whose scope is `public`: anything else is refused. */
export function isPublicAddress(text: string): boolean {
  return classifyAddress(text) === 'public';
}

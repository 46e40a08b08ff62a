import { isIP } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyAddress, formatIPv6, isPublicAddress, normalizeAddress, parseIPv6 } from './address.ts';
import type { AddressScope } from './address.ts';

// Classified only: none of these addresses is ever dialled.
const SCOPES: [string, AddressScope][] = [
  // IPv4
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['93.184.215.14', 'public'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['11.0.0.0', 'public'],
  ['100.63.255.255', 'public'],
  ['100.64.0.0', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  ['100.128.0.0', 'public'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['169.254.169.254', 'link_local'],
  ['169.254.0.1', 'link_local'],
  ['172.15.255.255', 'public'],
  ['172.16.0.0', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.0', 'public'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.1', 'documentation'],
  ['192.88.99.1', 'reserved'],
  ['192.168.1.1', 'private'],
  ['192.169.0.1', 'public'],
  ['198.17.255.255', 'public'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.255', 'benchmarking'],
  ['198.20.0.0', 'public'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.254', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  // IPv6
  ['::', 'unspecified'],
  ['0:0:0:0:0:0:0:0', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['0000:0000:0000:0000:0000:0000:0000:0001', 'loopback'],
  ['[::1]', 'loopback'],
  ['2606:4700:4700::1111', 'public'],
  ['2001:4860:4860::8888', 'public'],
  ['2A00:1450:4001:80B::200E', 'public'],
  ['fc00::1', 'private'],
  ['fd12:3456:789a::1', 'private'],
  ['FD00::1', 'private'],
  ['fe80::1', 'link_local'],
  ['fe80::1%eth0', 'link_local'],
  ['febf:ffff::1', 'link_local'],
  ['fec0::1', 'reserved'],
  ['ff02::1', 'multicast'],
  ['ff0e::101', 'multicast'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation'],
  ['2001:2::1', 'benchmarking'],
  ['2001:10::1', 'reserved'],
  ['100::1', 'reserved'],
  ['64:ff9b:1::1', 'private'],
  ['4000::1', 'reserved'],
  ['1::1', 'reserved'],
  // IPv4-mapped, compatible and translated IPv6: judged on the IPv4 address inside.
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::FFFF:7F00:0001', 'loopback'],
  ['0:0:0:0:0:ffff:127.0.0.1', 'loopback'],
  ['::ffff:169.254.169.254', 'link_local'],
  ['::ffff:a9fe:a9fe', 'link_local'],
  ['::ffff:10.1.2.3', 'private'],
  ['::ffff:8.8.8.8', 'public'],
  ['::ffff:0:127.0.0.1', 'loopback'],
  ['::127.0.0.1', 'loopback'],
  ['::7f00:1', 'loopback'],
  ['::8.8.8.8', 'public'],
  ['::0.0.0.2', 'unspecified'],
  // NAT64, 6to4, Teredo
  ['64:ff9b::127.0.0.1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'link_local'],
  ['64:ff9b::8.8.8.8', 'public'],
  ['2002:7f00:1::1', 'loopback'],
  ['2002:c0a8:101::1', 'private'],
  ['2002:808:808::1', 'public'],
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], // client 127.0.0.1 inverted
  ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'public'], // client 8.8.8.8 inverted
];

const NOT_ADDRESSES = [
  '',
  'localhost',
  '127.1',
  '127.0.1',
  '2130706433',
  '0x7f000001',
  '0177.0.0.1',
  '127.000.000.001',
  '01.2.3.4',
  '256.0.0.1',
  '1.2.3.4.5',
  '1.2.3.',
  ' 1.2.3.4',
  '1.2.3.4 ',
  '1.2.3.-4',
  '::1::',
  ':::',
  ':1',
  '1:',
  '1:2:3:4:5:6:7:8:9',
  '1:2:3:4:5:6:7',
  '::1:2:3:4:5:6:7:8',
  '12345::',
  'g::1',
  '::ffff:127.0.0.256',
  '::1.2.3.4:5',
  'fe80::1%',
  '[::1',
];

describe('classifyAddress', () => {
  it.each(SCOPES)('%s is %s', (address, scope) => {
    expect(classifyAddress(address)).toBe(scope);
    expect(isPublicAddress(address)).toBe(scope === 'public');
  });

  it.each(NOT_ADDRESSES)('%j is not an address, so never public', (text) => {
    expect(classifyAddress(text)).toBeNull();
    expect(isPublicAddress(text)).toBe(false);
  });
});

describe('normalizeAddress', () => {
  it.each([
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::FFFF:7F00:1', '127.0.0.1'],
    ['0:0:0:0:0:ffff:c0a8:0101', '192.168.1.1'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:0db8:0000:0001:0000:0000:0000:0001', '2001:db8:0:1::1'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['::127.0.0.1', '::7f00:1'],
    ['203.0.113.9', '203.0.113.9'],
  ])('%s -> %s', (input, output) => {
    expect(normalizeAddress(input)).toBe(output);
  });

  it('rejects what is not an address', () => {
    expect(normalizeAddress('127.1')).toBeNull();
    expect(normalizeAddress('example.com')).toBeNull();
  });

  it('agrees with Node on what is an IPv6 address, and round-trips every one', () => {
    fc.assert(
      fc.property(fc.ipV6(), (text) => {
        const bytes = parseIPv6(text);
        expect(bytes).not.toBeNull();
        const formatted = formatIPv6(bytes!);
        expect(isIP(formatted)).toBe(6);
        expect(parseIPv6(formatted)).toEqual(bytes);
      }),
    );
  });

  it('parses every IPv4 dotted quad', () => {
    fc.assert(
      fc.property(fc.ipV4(), (text) => {
        expect(normalizeAddress(text)).toBe(text);
      }),
    );
  });
});

import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { FormatsPlugin } from 'ajv-formats';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { clientAddress } from '../../http/client-address.ts';
import { buildIpInfo as build, HostnameCache, reverseHostname } from './ip-info.ts';
import type { IpInfo, IpInfoOptions, NameLookup } from './ip-info.ts';

// Every answer must satisfy the contract's IpInfo schema (the bundled tools document).
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(JSON.parse(readFileSync(new URL('../../../generated/tools.openapi.json', import.meta.url), 'utf8')) as object, 'tools');
const ipInfoSchema = ajv.getSchema('tools#/components/schemas/IpInfo')!;

async function buildIpInfo(address: string, userAgent: string | undefined, options?: IpInfoOptions): Promise<IpInfo> {
  const info = await build(address, userAgent, options);
  expect(ipInfoSchema(info), JSON.stringify(ipInfoSchema.errors)).toBe(true);
  return info;
}

/** An in-process name table standing in for DNS (no query leaves the process); records every question. */
function table(reverse: Record<string, string[]>, forward: Record<string, string[]>) {
  const asked: string[] = [];
  const make = (): NameLookup => ({
    reverse: async (ip) => {
      asked.push(`PTR ${ip}`);
      const names = reverse[ip];
      if (!names) throw Object.assign(new Error('queryPtr ENOTFOUND'), { code: 'ENOTFOUND' });
      return names;
    },
    forward: async (name, version) => {
      asked.push(`${version === 4 ? 'A' : 'AAAA'} ${name}`);
      return forward[name] ?? [];
    },
  });
  return { asked, lookup: make };
}

describe('buildIpInfo', () => {
  it.each([
    ['127.0.0.1', 4, 'loopback'],
    ['::1', 6, 'loopback'],
    ['::ffff:127.0.0.1', 4, 'loopback'],
    ['10.1.2.3', 4, 'private'],
    ['fd00::5', 6, 'private'],
    ['169.254.169.254', 4, 'link_local'],
    ['100.64.1.1', 4, 'cgnat'],
    ['192.0.2.1', 4, 'reserved'],
    ['2001:db8::1', 6, 'reserved'],
    ['198.18.0.1', 4, 'reserved'],
    ['::', 6, 'reserved'],
  ] as const)('never asks DNS about %s (%s, %s)', async (address, version, scope) => {
    const dns = table({}, {});
    const info = await buildIpInfo(address, 'curl/8.5.0', { lookup: dns.lookup });
    expect(info).toEqual({
      ip: address === '::ffff:127.0.0.1' ? '127.0.0.1' : address,
      version,
      scope,
      hostname: null,
      user_agent: 'curl/8.5.0',
    });
    expect(dns.asked).toEqual([]);
  });

  it('reports a forward-confirmed reverse name for a public address', async () => {
    const dns = table({ '8.8.8.8': ['dns.google.'] }, { 'dns.google': ['8.8.4.4', '8.8.8.8'] });
    const info = await buildIpInfo('8.8.8.8', undefined, { lookup: dns.lookup });
    expect(info).toEqual({ ip: '8.8.8.8', version: 4, scope: 'public', hostname: 'dns.google', user_agent: null });
    expect(dns.asked).toEqual(['PTR 8.8.8.8', 'A dns.google']);
  });

  it('confirms IPv6 names with AAAA and compares normalized addresses', async () => {
    const ip = '2001:4860:4860::8888';
    const dns = table({ [ip]: ['dns.google'] }, { 'dns.google': ['2001:4860:4860:0:0:0:0:8888'] });
    expect(await reverseHostname(ip, { lookup: dns.lookup })).toBe('dns.google');
    expect(dns.asked).toEqual([`PTR ${ip}`, 'AAAA dns.google']);
  });

  it('drops a name that does not resolve back to the address', async () => {
    const dns = table({ '1.2.3.4': ['www.bank.example'] }, { 'www.bank.example': ['5.6.7.8'] });
    expect(await reverseHostname('1.2.3.4', { lookup: dns.lookup })).toBeNull();
  });

  it('drops names that are not host names', async () => {
    const dns = table({ '1.2.3.4': ['<script>.example', 'a b.example'] }, { '<script>.example': ['1.2.3.4'] });
    expect(await reverseHostname('1.2.3.4', { lookup: dns.lookup })).toBeNull();
    expect(dns.asked).toEqual(['PTR 1.2.3.4']);
  });

  it('answers null when there is no name', async () => {
    const dns = table({}, {});
    expect(await reverseHostname('1.2.3.4', { lookup: dns.lookup })).toBeNull();
  });

  it('gives up after the timeout and cancels the lookup', async () => {
    let cancelled = false;
    const hanging = (): NameLookup => ({
      reverse: () => new Promise(() => {}),
      forward: () => new Promise(() => {}),
      cancel: () => {
        cancelled = true;
      },
    });
    expect(await reverseHostname('1.2.3.4', { lookup: hanging, timeoutMs: 30 })).toBeNull();
    expect(cancelled).toBe(true);
  });

  it('cuts a long User-Agent and reports an empty one as null', async () => {
    const dns = table({}, {});
    expect((await buildIpInfo('127.0.0.1', 'x'.repeat(2000), { lookup: dns.lookup })).user_agent).toHaveLength(512);
    expect((await buildIpInfo('127.0.0.1', '   ', { lookup: dns.lookup })).user_agent).toBeNull();
  });

  it('refuses what is not an address', async () => {
    await expect(buildIpInfo('unknown', undefined)).rejects.toThrow(/not an IP address/);
  });
});

describe('HostnameCache', () => {
  it('remembers definite answers until they expire', async () => {
    let t = 0;
    const cache = new HostnameCache({ ttlMs: 1000, now: () => t });
    const dns = table({ '8.8.8.8': ['dns.google'] }, { 'dns.google': ['8.8.8.8'] });
    expect(await reverseHostname('8.8.8.8', { lookup: dns.lookup, cache })).toBe('dns.google');
    expect(await reverseHostname('8.8.8.8', { lookup: dns.lookup, cache })).toBe('dns.google');
    expect(dns.asked).toEqual(['PTR 8.8.8.8', 'A dns.google']);
    // No PTR record is a definite answer too.
    expect(await reverseHostname('1.2.3.4', { lookup: dns.lookup, cache })).toBeNull();
    expect(await reverseHostname('1.2.3.4', { lookup: dns.lookup, cache })).toBeNull();
    expect(dns.asked.filter((q) => q === 'PTR 1.2.3.4')).toHaveLength(1);
    t = 1000;
    expect(await reverseHostname('8.8.8.8', { lookup: dns.lookup, cache })).toBe('dns.google');
    expect(dns.asked.filter((q) => q === 'PTR 8.8.8.8')).toHaveLength(2);
  });

  it('does not remember resolver failures or timeouts', async () => {
    const cache = new HostnameCache();
    let calls = 0;
    const failing = (): NameLookup => ({
      reverse: async () => {
        calls++;
        throw Object.assign(new Error('queryPtr ESERVFAIL'), { code: 'ESERVFAIL' });
      },
      forward: async () => [],
    });
    expect(await reverseHostname('1.2.3.4', { lookup: failing, cache })).toBeNull();
    expect(await reverseHostname('1.2.3.4', { lookup: failing, cache })).toBeNull();
    expect(calls).toBe(2);
    const hanging = (): NameLookup => ({ reverse: () => new Promise(() => {}), forward: async () => [] });
    expect(await reverseHostname('5.6.7.8', { lookup: hanging, cache, timeoutMs: 20 })).toBeNull();
    expect(cache.get('5.6.7.8')).toBeUndefined();
  });

  it('keeps at most maxEntries, dropping the oldest', () => {
    const cache = new HostnameCache({ maxEntries: 2 });
    cache.set('1.1.1.1', 'a');
    cache.set('2.2.2.2', 'b');
    cache.set('3.3.3.3', null);
    expect(cache.get('1.1.1.1')).toBeUndefined();
    expect(cache.get('2.2.2.2')).toBe('b');
    expect(cache.get('3.3.3.3')).toBeNull();
  });
});

describe('ip-info over real loopback HTTP', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => server?.close(r));
  });

  it('reports the socket address, ignoring a forged X-Forwarded-For, without a DNS query', async () => {
    const dns = table({}, {});
    const app = express();
    app.get('/api/tools/ip-info', async (req, res) => {
      res.json(await buildIpInfo(clientAddress(req), req.get('user-agent'), { lookup: dns.lookup }));
    });
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/api/tools/ip-info`, {
      headers: { 'user-agent': 'probe/1.0', 'x-forwarded-for': '8.8.8.8' },
    });
    expect(await res.json()).toEqual({
      ip: '127.0.0.1',
      version: 4,
      scope: 'loopback',
      hostname: null,
      user_agent: 'probe/1.0',
    });
    expect(dns.asked).toEqual([]);
  });
});

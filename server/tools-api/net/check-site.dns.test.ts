/**
 * check-site's own resolver (c-ares, A + AAAA) against a DNS server on 127.0.0.1, so the real
 * resolution path is exercised without a query leaving the machine. The server can change its
 * answer between queries, as a rebinding attacker's would.
 */
import dgram from 'node:dgram';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.ts';
import { checkSite } from './check-site.ts';
import { onlyTargets, targetPolicy } from './target-policy.ts';
import { parseIPv4, parseIPv6 } from './address.ts';

interface Zone {
  /** Answers for a name, asked anew for every query (TTL 0). Undefined: NXDOMAIN. */
  answer(name: string, type: 'A' | 'AAAA'): string[] | undefined;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  while (msg[i]! !== 0) {
    const len = msg[i]!;
    labels.push(msg.subarray(i + 1, i + 1 + len).toString('latin1'));
    i += len + 1;
  }
  return { name: labels.join('.').toLowerCase(), end: i + 1 };
}

/** A minimal authoritative DNS server on 127.0.0.1 (UDP), logging every question. */
async function dnsServer(zone: Zone): Promise<{ address: string; questions: string[] }> {
  const questions: string[] = [];
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, peer) => {
    const { name, end } = readName(msg, 12);
    const qtype = msg.readUInt16BE(end);
    const type = qtype === 28 ? 'AAAA' : qtype === 1 ? 'A' : null;
    questions.push(`${type ?? qtype} ${name}`);
    const answers = type ? zone.answer(name, type) : [];
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // id
    header.writeUInt16BE(answers === undefined ? 0x8583 : 0x8580, 2); // response, AA, RD, RA; NXDOMAIN or NOERROR
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers?.length ?? 0, 6);
    const records = (answers ?? []).map((address) => {
      const rdata = Buffer.from(type === 'A' ? parseIPv4(address)! : parseIPv6(address)!);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // pointer to the question's name
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(0, 6); // TTL 0
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    socket.send(Buffer.concat([header, msg.subarray(12, end + 4), ...records]), peer.port, peer.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  closers.push(() => new Promise((r) => socket.close(() => r())));
  return { address: `127.0.0.1:${socket.address().port}`, questions };
}

async function listener(): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server = http.createServer((_req, res) => res.end('ok'));
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return { port: (server.address() as net.AddressInfo).port, connections: () => connections };
}

describe('check-site with its own DNS resolver (a DNS server on loopback)', () => {
  it('resolves a name and connects to the allowed address', async () => {
    const site = await listener();
    const dns = await dnsServer({ answer: (name, type) => (name === 'site.test' ? (type === 'A' ? ['127.0.0.1'] : []) : undefined) });
    const result = await checkSite(`http://site.test:${site.port}/`, {
      policy: onlyTargets([{ address: '127.0.0.1', port: site.port }]),
      dnsServers: [dns.address],
    });
    expect(result).toMatchObject({ status: 'up', http_status: 200, reason: null });
    expect(dns.questions.sort()).toEqual(['A site.test', 'AAAA site.test']);
  });

  it('reports a name that does not exist as DNS_FAILURE', async () => {
    const dns = await dnsServer({ answer: () => undefined });
    const result = await checkSite('http://missing.test/', { policy: targetPolicy(), dnsServers: [dns.address] });
    expect(result).toMatchObject({ status: 'down', http_status: null, reason: 'DNS_FAILURE' });
  });

  it('refuses a name whose A and AAAA records are loopback and mapped loopback, without connecting', async () => {
    const site = await listener();
    const dns = await dnsServer({ answer: (_name, type) => (type === 'A' ? ['127.0.0.1'] : ['::ffff:127.0.0.1']) });
    const err = await checkSite(`http://rebind.test:${site.port}/`, { policy: targetPolicy(), dnsServers: [dns.address] }).catch(
      (e: unknown) => e,
    );
    expect((err as ApiError).code).toBe('URL_NOT_ALLOWED');
    expect(site.connections()).toBe(0);
  });

  it('resolves each hop once and judges it on its own answer (the answer changes between queries)', async () => {
    const other = await listener();
    // First A answer 127.0.0.1 (allowed for the first server), every later one 127.0.0.2.
    let asked = 0;
    const dns = await dnsServer({
      answer: (_name, type) => {
        if (type === 'AAAA') return [];
        asked++;
        return asked === 1 ? ['127.0.0.1'] : ['127.0.0.2'];
      },
    });
    const first = await new Promise<http.Server>((resolve) => {
      const s = http.createServer((_req, res) => res.writeHead(302, { Location: `http://hop.test:${other.port}/` }).end());
      s.listen(0, '127.0.0.1', () => resolve(s));
    });
    closers.push(() => new Promise((r) => first.close(() => r())));
    const firstPort = (first.address() as net.AddressInfo).port;
    const err = await checkSite(`http://start.test:${firstPort}/`, {
      policy: onlyTargets([
        { address: '127.0.0.1', port: firstPort },
        { address: '127.0.0.1', port: other.port },
      ]),
      dnsServers: [dns.address],
    }).catch((e: unknown) => e);
    // The hop resolved (once) to 127.0.0.2, which the policy does not allow: refused, nothing dialled.
    expect((err as ApiError).code).toBe('URL_NOT_ALLOWED');
    expect((err as ApiError).details).toEqual({ url: `http://hop.test:${other.port}/` });
    expect(dns.questions.filter((q) => q.startsWith('A '))).toEqual(['A start.test', 'A hop.test']);
    expect(other.connections()).toBe(0);
  });
});

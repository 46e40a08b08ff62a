import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../testing/harness.ts';
import { HTTP_TIMEOUTS } from './listen.ts';

/** Connects to the server; resolves with the socket and a promise of how long until the server closed it. */
async function open(h: Harness): Promise<{ socket: Socket; closedAfterMs: Promise<number>; received: () => string }> {
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(h.base).port) });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const opened = Date.now();
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('error', () => {});
  const closedAfterMs = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now() - opened)));
  return { socket, closedAfterMs, received: () => received };
}

describe.concurrent('connection timeouts over real sockets', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.cleanup());

  it('cuts a client that trickles its headers, well within 30 s', async () => {
    const { socket, closedAfterMs } = await open(h);
    socket.write('GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    // One byte of a header every half second: never idle, never finished.
    const trickle = setInterval(() => !socket.destroyed && socket.write('X'), 500);
    try {
      const ms = await closedAfterMs;
      expect(ms).toBeGreaterThanOrEqual(HTTP_TIMEOUTS.headersTimeoutMs - 1000);
      expect(ms).toBeLessThan(30_000);
    } finally {
      clearInterval(trickle);
    }
  }, 40_000);

  it('closes an idle kept-alive connection after its keep-alive timeout', async () => {
    const { socket, closedAfterMs, received } = await open(h);
    socket.write('GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
    const ms = await closedAfterMs;
    expect(received()).toMatch(/^HTTP\/1\.1 200/);
    expect(received()).toContain(`Keep-Alive: timeout=${HTTP_TIMEOUTS.keepAliveTimeoutMs / 1000}`);
    expect(ms).toBeGreaterThanOrEqual(HTTP_TIMEOUTS.keepAliveTimeoutMs - 500);
    expect(ms).toBeLessThan(HTTP_TIMEOUTS.keepAliveTimeoutMs + 3000);
  }, 20_000);

  it('cuts a connection that never sends a request', async () => {
    const { closedAfterMs } = await open(h);
    expect(await closedAfterMs).toBeLessThan(30_000);
  }, 40_000);
});

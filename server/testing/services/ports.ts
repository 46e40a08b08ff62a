import { once } from 'node:events';
import { createServer } from 'node:net';

/** A loopback port free a moment ago (the kernel's choice); callers retry if another process takes it first. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

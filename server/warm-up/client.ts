/**
 * The warm-up's client (./index.ts), in a worker thread: serves a site for check-site to check,
 * posts its port, waits for the app's port, sends the requests (./mix.ts) and posts a WarmUpReport.
 */
import { once } from 'node:events';
import { Agent, createServer, request as httpRequest } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { checkedSite, TOOLS_MIX, toolsRequest } from './mix.ts';

export interface WarmUpPlan {
  requests: number;
}

export interface WarmUpReport {
  requests: number;
  /** Answers that were not 2xx, or requests that got none. */
  failed: number;
  ms: number;
}

/**
 * At most this many clients at once, each going round the mix from its own place in it: every
 * operation is warmed from the first requests on. Each client connects from an address of its own
 * (127.0.1.x), so the per-address limits count each client apart; one contact message in ten
 * requests keeps up to 10,000 requests within them (contact's limit, TOOL_LIMITS, is the tightest).
 */
const CLIENTS = 200;

/** One of the warm-up's clients: its connection and the address it connects from. */
interface Client {
  agent: Agent;
  address: string;
}

/**
 * One request on the client's kept-alive connection, with the headers a `fetch()` sends (browsers
 * and Node alike), in its order: the parser's objects take the shapes real requests give them.
 * Resolves with the status, 0 when none came.
 */
function send({ agent, address }: Client, port: number, method: string, path: string, body?: unknown): Promise<number> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers = {
    host: `127.0.0.1:${port}`,
    connection: 'keep-alive',
    'x-forwarded-for': address,
    ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
    accept: '*/*',
    'accept-language': '*',
    'sec-fetch-mode': 'cors',
    'user-agent': 'backup-service-warm-up',
    'accept-encoding': 'gzip, deflate',
    ...(payload === undefined ? {} : { 'content-length': String(Buffer.byteLength(payload)) }),
  };
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent, setHost: false, headers }, (res) => {
      res.resume().once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', () => resolve(0));
    req.end(payload);
  });
}

function warmUpRequest(client: Client, port: number, sitePort: number, index: number, turn: number): Promise<number> {
  const kind = TOOLS_MIX[(index + turn) % TOOLS_MIX.length]!;
  const { method, path, body } = toolsRequest(kind, sitePort, { name: 'Warm-up', email: `warm-up-${index}-${turn}@example.com` });
  return send(client, port, method, path, body);
}

const { requests } = workerData as WarmUpPlan;
const site = createServer(checkedSite);
await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
const sitePort = (site.address() as { port: number }).port;
parentPort!.postMessage(sitePort);
const [port] = (await once(parentPort!, 'message')) as [number];
const started = performance.now();
let failed = 0;
await Promise.all(
  Array.from({ length: Math.min(CLIENTS, requests) }, async (_, index) => {
    const address = `127.0.1.${index + 1}`;
    const client = { agent: new Agent({ keepAlive: true, maxSockets: 1, localAddress: address }), address };
    for (let turn = 0; index + turn * CLIENTS < requests; turn++) {
      const status = await warmUpRequest(client, port, sitePort, index, turn);
      if (status < 200 || status > 299) failed++;
    }
    client.agent.destroy();
  }),
);
site.close();
parentPort!.postMessage({ requests, failed, ms: Math.round(performance.now() - started) } satisfies WarmUpReport);

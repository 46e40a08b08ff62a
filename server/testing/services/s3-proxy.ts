import { request, createServer, type IncomingMessage, type Server } from 'node:http';

/**
 * An HTTP proxy in front of an S3 endpoint that counts what passes (requests per method, bytes
 * uploaded and downloaded) and can answer in the store's place with an S3 error, for benchmarks
 * (requests made) and fault tests (throttling, server errors).
 */
export interface S3Proxy {
  endpoint: string;
  counts: { requests: number; byMethod: Record<string, number>; byKind: Record<string, number>; bytesUp: number; bytesDown: number };
  reset(): void;
  /** The next `times` requests (matching `when`, if given) are answered with this error instead. */
  fail(status: number, code: string, times: number, when?: (req: IncomingMessage) => boolean): void;
  /** Runs before each request is passed on (and holds it until done): a fault test stops or freezes the store at an exact point. */
  beforeForward(hook: ((req: IncomingMessage) => Promise<void> | void) | null): void;
  close(): Promise<void>;
}

export async function startS3Proxy(target: string): Promise<S3Proxy> {
  const upstream = new URL(target);
  const counts = { requests: 0, byMethod: {} as Record<string, number>, byKind: {} as Record<string, number>, bytesUp: 0, bytesDown: 0 };
  let failing: { status: number; code: string; times: number; when?: ((req: IncomingMessage) => boolean) | undefined } | null = null;
  let hook: ((req: IncomingMessage) => Promise<void> | void) | null = null;

  const server: Server = createServer((req, res) => {
    counts.requests++;
    counts.byMethod[req.method!] = (counts.byMethod[req.method!] ?? 0) + 1;
    const kind = `${req.method} ${objectKind(req.url ?? '/')}`;
    counts.byKind[kind] = (counts.byKind[kind] ?? 0) + 1;
    req.on('data', (chunk: Buffer) => (counts.bytesUp += chunk.length));
    if (failing && failing.times > 0 && (!failing.when || failing.when(req))) {
      failing.times--;
      const body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${failing.code}</Code><Message>injected</Message></Error>`;
      req.resume();
      req.on('end', () => res.writeHead(failing!.status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) }).end(body));
      return;
    }
    req.pause();
    void Promise.resolve(hook?.(req)).then(() => {
      const forward = request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.on('data', (chunk: Buffer) => (counts.bytesDown += chunk.length));
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy()); // the store is gone: the client sees the connection drop
      req.pipe(forward);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    counts,
    reset() {
      counts.requests = 0;
      counts.byMethod = {};
      counts.byKind = {};
      counts.bytesUp = 0;
      counts.bytesDown = 0;
    },
    fail(status, code, times, when) {
      failing = { status, code, times, when };
    },
    beforeForward(fn) {
      hook = fn;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * What kind of repository object a request is about, by the first name a repository uses in its
 * key or listing prefix (both ours and restic's: data, index, snapshots, keys, locks, config).
 */
function objectKind(url: string): string {
  const parsed = new URL(url, 'http://x');
  const path = parsed.searchParams.get('prefix') ?? decodeURIComponent(parsed.pathname);
  const what = parsed.searchParams.has('prefix') || parsed.searchParams.has('list-type') ? 'list ' : '';
  const kind = path.split('/').find((part) => ['data', 'index', 'snapshots', 'keys', 'locks', 'config'].includes(part));
  return what + (kind ?? 'other');
}

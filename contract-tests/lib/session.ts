/**
 * A scripted client for the flows: calls operations by API-relative path on some base URL (the
 * server, or a proxy in front of it), checks each answer against the expected status, and hands
 * every exchange to an observer (the Prism-violation check, the schema validator, coverage).
 */
import { send, type RawResponse } from './http.ts';
import { matchOperation, type ApiDoc, type ApiName, type Operation } from './spec.ts';

export interface Exchange {
  api: ApiName;
  method: string;
  path: string;
  op: Operation | undefined;
  expected: number[];
  res: RawResponse;
}

export interface CallOptions {
  headers?: Record<string, string>;
  body?: unknown;
  /** Statuses the step expects; any other is a failure of the flow. */
  expect: number | number[];
  /** Send without the session's bearer token. */
  anonymous?: boolean;
  localAddress?: string;
}

export class Session {
  token: string | undefined;
  readonly failures: string[] = [];
  readonly exchanges: Exchange[] = [];
  private readonly bases: Record<ApiName, string>;
  private readonly apis: ApiDoc[];
  private readonly observe: (x: Exchange) => void;
  /** Headers sent on every call unless the call sets them (e.g. X-Forwarded-For). */
  defaultHeaders: Record<string, string> = {};
  private seq = 0;

  /** bases: where each API's paths (as written in its document) are served. */
  constructor(apis: ApiDoc[], bases: Record<ApiName, string>, observe: (x: Exchange) => void = () => {}) {
    this.apis = apis;
    this.bases = bases;
    this.observe = observe;
  }

  async call(api: ApiName, method: string, path: string, options: CallOptions): Promise<RawResponse> {
    const headers: Record<string, string> = { Accept: 'application/json', 'X-Request-Id': `flow-${++this.seq}`, ...this.defaultHeaders, ...options.headers };
    if (api === 'backup' && this.token && !options.anonymous && !Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) {
      headers['Authorization'] = `Bearer ${this.token}`;
    }
    const res = await send({ method, url: this.bases[api] + path, headers, body: options.body, localAddress: options.localAddress });
    const apiDoc = this.apis.find((a) => a.api === api);
    const op = apiDoc ? matchOperation([apiDoc], method, apiDoc.basePath + path) : undefined;
    const expected = Array.isArray(options.expect) ? options.expect : [options.expect];
    const exchange: Exchange = { api, method, path, op, expected, res };
    this.exchanges.push(exchange);
    if (!expected.includes(res.status)) {
      this.failures.push(`${method} ${path}: expected ${expected.join('|')}, got ${res.status} ${res.text.slice(0, 300)}`);
    }
    this.observe(exchange);
    return res;
  }

  /** Data of a success envelope (or undefined). */
  static data(res: RawResponse): Record<string, unknown> | undefined {
    const body = res.json as { data?: Record<string, unknown> } | undefined;
    return body?.data;
  }

  async login(apiKey: string, secret: string): Promise<void> {
    const res = await this.call('backup', 'POST', '/auth/token', { body: { api_key: apiKey, secret }, expect: 200 });
    const token = Session.data(res)?.['access_token'];
    if (typeof token !== 'string') throw new Error(`no token: ${res.status} ${res.text.slice(0, 200)}`);
    this.token = token;
  }

  /** Polls a job until it leaves queued/running. */
  async waitJob(kind: 'backup' | 'restore' | 'maintenance', id: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await this.call('backup', 'GET', `/${kind}/${id}`, { expect: 200 });
      if (res.status !== 200) throw new Error(`${kind} ${id} cannot be followed: ${res.status} ${res.text.slice(0, 300)}`);
      const data = Session.data(res);
      const status = data?.['status'];
      if (data && typeof status === 'string' && !['queued', 'running'].includes(status)) return data;
      if (Date.now() > deadline) throw new Error(`${kind} ${id} still ${String(status)} after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

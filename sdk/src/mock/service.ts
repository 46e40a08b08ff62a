/**
 * The mock's behaviour, one layer shared by the mock server (Prism behind it) and the SDK's MSW
 * handlers (the generated examples behind them). Each request goes through the server's order
 * of checks: route (404/405), token (401), rate limits (429), media type, size and JSON (415,
 * 413, 400), the spec's validation (400), then the state (jobs, files, tokens, subscribers) or,
 * for an operation the state does not model, the spec's examples. `Prefer: example=`, `code=`
 * or `dynamic=` skips the checks and answers that example. Every answer then gets the request id,
 * a fresh `meta`, and rate-limit headers that agree with the counters.
 */
import { MockApiError, errorResponse, merge, requestIdFor, type MockResponse } from './answers.ts';
import { BackupState } from './backup-state.ts';
import { binding, Counters, limitHeaders, secondsUntilReset, type LimitState } from './limits.ts';
import { Routes, type ApiName, type MockApis, type Route } from './routes.ts';
import { ToolsState } from './tools-state.ts';
import type { Account, Handler, MockCall, MockOptions, MockRequest } from './types.ts';

export type { MockRequest } from './types.ts';

export interface Problem {
  path: string;
  message: string;
}

/** Where answers come from when the state has none, and how requests and answers are checked against the spec. */
export interface ExampleSource {
  /** The request's problems against the spec ([] when it is valid). */
  validate(request: MockRequest, route: Route): Promise<Problem[]>;
  /** The spec's answer: the example Prefer names, else the first success example. */
  example(request: MockRequest, route: Route): Promise<MockResponse>;
  /** An answer's problems against the spec, reported through onViolation. */
  check?(request: MockRequest, route: Route, response: MockResponse): Promise<string[]>;
}

export interface MockServiceOptions extends MockOptions {
  /** The operations of both APIs (generated/mock-operations.ts, or built from the loaded documents). */
  apis: MockApis;
  examples: ExampleSource;
  /** Called with every answer that breaks the spec (a bug of the mock). */
  onViolation?: (request: MockRequest, response: MockResponse, problems: string[]) => void;
}

export interface MockService {
  handle(request: MockRequest): Promise<MockResponse>;
  /** Forgets every token, job, subscriber, message and rate-limit count. */
  reset(): void;
  readonly tools: ToolsState;
}

/** The server's request body limit. */
export const BODY_LIMIT_BYTES = 64 * 1024;

/** `Prefer: example=`, `code=` or `dynamic=`: the caller wants the spec's example, not the state. */
const forced = (req: MockRequest): boolean => /(?:^|[\s,;])(example|code|dynamic)=/.test(req.headers.get('prefer') ?? '');
const isJsonType = (type: string | null): boolean => type !== null && /^application\/([\w.+-]*\+)?json\s*(;|$)/i.test(type);
const isEnvelope = (body: unknown): body is { success: boolean; meta?: unknown } =>
  typeof body === 'object' && body !== null && typeof (body as { success?: unknown }).success === 'boolean';

export function createMockService(options: MockServiceOptions): MockService {
  const routes = new Routes(options.apis);
  const backup = new BackupState(options, routes);
  const tools = new ToolsState(routes);
  const counters = new Counters();
  const startedAt = Date.now();
  const handlers: Record<ApiName, Record<string, Handler>> = { backup: { ...backup.handlers, getStatus: statusAnswer }, tools: tools.handlers };

  /** GET /status: the example, with the mock's own clock, uptime and job counts. */
  async function statusAnswer(call: MockCall): Promise<MockResponse> {
    const example = await options.examples.example(call.request, call.route);
    const now = Date.now();
    const data = merge((example.body as { data?: object } | undefined)?.data ?? {}, {
      time: new Date(now).toISOString(),
      uptime_seconds: Math.floor((now - startedAt) / 1000),
      jobs: backup.jobCounts(now),
    });
    return { ...example, body: { ...(example.body as object), data } };
  }

  /** Counts the request against its limits (or only reads them, for a forced example). */
  function countLimits(req: MockRequest, route: Route, account: Account | undefined, count: boolean): LimitState[] {
    const limit = route.op.rateLimit;
    if (!limit) return [];
    const windowMs = limit.windowSeconds * 1000;
    const take = count ? counters.hit.bind(counters) : counters.peek.bind(counters);
    if (limit.scope === 'account') {
      // An unknown plan gets the smallest allowance (the server does the same).
      const allowance = limit.limits?.[account?.plan ?? ''] ?? Math.min(...Object.values(limit.limits ?? {}));
      return [take('account', account?.id ?? '(none)', allowance, windowMs)];
    }
    const states = [take(`${route.api}-${route.operationId}`, req.clientAddress, limit.limit!, windowMs)];
    if (limit.failedLimit !== undefined) states.push(take('auth-failures', req.clientAddress, limit.failedLimit, windowMs));
    return states;
  }

  /** The JSON body, checked as the server checks it; operations without a body do not read one. */
  function parseBody(req: MockRequest, route: Route): unknown {
    if (route.op.requestBody === null || req.body === undefined || req.bodyBytes === 0) return undefined;
    const type = req.headers.get('content-type');
    if (!isJsonType(type)) {
      throw new MockApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be sent as application/json.', { content_type: type });
    }
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(type ?? '')?.[1];
    if (charset !== undefined && charset.toLowerCase() !== 'utf-8') throw new MockApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be UTF-8 JSON.', { content_type: type });
    if (req.bodyBytes > BODY_LIMIT_BYTES) throw new MockApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than 64 KiB.', { limit_bytes: BODY_LIMIT_BYTES });
    if (req.utf8 === false) throw new MockApiError('INVALID_JSON', 'The request body is not valid UTF-8.');
    try {
      return JSON.parse(req.body);
    } catch {
      throw new MockApiError('INVALID_JSON', 'The request body is not valid JSON.');
    }
  }

  async function answer(req: MockRequest, route: Route, limits: LimitState[]): Promise<MockResponse> {
    const prefer = req.headers.get('prefer');
    if (forced(req)) {
      let account: Account | undefined;
      try {
        account = route.op.secured ? backup.authenticate(req.headers.get('authorization')) : undefined;
      } catch {
        account = undefined;
      }
      limits.push(...countLimits(req, route, account, false));
      return options.examples.example(req, route);
    }
    let account: Account | undefined;
    if (route.op.secured) {
      try {
        account = backup.authenticate(req.headers.get('authorization'));
      } catch (error) {
        // A request without a valid token counts as a failed authentication of the address.
        const failures = Object.values(options.apis.backup.operations).find((o) => o.rateLimit?.failedLimit !== undefined)?.rateLimit;
        if (failures?.failedLimit !== undefined) limits.push(counters.hit('auth-failures', req.clientAddress, failures.failedLimit, failures.windowSeconds * 1000));
        throw error;
      }
    }
    limits.push(...countLimits(req, route, account, true));
    const refused = limits.find((s) => !s.allowed);
    if (refused) {
      const retryAfter = secondsUntilReset(refused);
      const message = `Rate limit of ${refused.limit} requests per ${refused.windowMs / 1000} seconds exceeded. Retry after ${retryAfter} seconds.`;
      throw new MockApiError('RATE_LIMITED', message, {}, { 'Retry-After': String(retryAfter) });
    }
    const body = parseBody(req, route);
    // Unknown query parameters are refused as the server refuses them (Prism lets them pass).
    const problems = [...new Set(req.url.searchParams.keys())]
      .filter((name) => !route.op.query.includes(name))
      .map((name) => ({ path: `/query/${name}`, message: 'is not a parameter of this operation' }));
    problems.push(...(await options.examples.validate(req, route)));
    if (problems.length > 0) throw new MockApiError('VALIDATION_ERROR', 'The request is not valid.', { errors: problems });
    const query = new URLSearchParams(req.url.search);
    for (const [name, value] of Object.entries(route.op.queryDefaults)) if (!query.has(name)) query.set(name, String(value));
    const call: MockCall = {
      route,
      request: req,
      basePath: options.apis[route.api].basePath,
      query,
      body: route.op.requestBody?.defaults ? merge(route.op.requestBody.defaults, body) : body,
      prefer,
      ...(account ? { account } : {}),
    };
    const handler = handlers[route.api][route.operationId];
    return (await handler?.(call)) ?? options.examples.example(req, route);
  }

  function finish(res: MockResponse, requestId: string, limits: LimitState[]): MockResponse {
    const headers: Record<string, string> = {};
    const state = binding(limits);
    // Rate-limit headers (and a 429's Retry-After) come from the counters, whatever the example says.
    const ours = state ? /^x-ratelimit-|^x-request-id$/i : /^x-request-id$/i;
    for (const [name, value] of Object.entries(res.headers)) {
      if (!ours.test(name) && !(state && res.status === 429 && /^retry-after$/i.test(name))) headers[name] = value;
    }
    if (state) {
      Object.assign(headers, limitHeaders(res.status === 429 ? { ...state, allowed: false } : state));
      if (res.status === 429) headers['Retry-After'] = String(secondsUntilReset(state));
    }
    headers['X-Request-Id'] = requestId;
    const body = isEnvelope(res.body) ? { ...res.body, meta: { request_id: requestId, timestamp: new Date().toISOString() } } : res.body;
    return { ...res, headers, body };
  }

  return {
    tools,
    reset() {
      backup.reset();
      tools.reset();
      counters.clear();
    },
    async handle(req) {
      const requestId = requestIdFor(req.headers.get('x-request-id'));
      const route = routes.match(req.api, req.method, req.url.pathname);
      const limits: LimitState[] = [];
      let res: MockResponse;
      let failureCounted: LimitState | undefined;
      try {
        if (route === null) throw new MockApiError('NOT_FOUND', 'No such resource.');
        if ('allow' in route) {
          throw new MockApiError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on this path.`, { allowed_methods: route.allow }, { Allow: route.allow.join(', ') });
        }
        try {
          res = await answer(req, route, limits);
        } finally {
          failureCounted = route.operationId === 'createToken' ? limits.find((s) => s.name === 'auth-failures' && s.allowed) : undefined;
        }
      } catch (error) {
        if (!(error instanceof MockApiError)) throw error;
        res = errorResponse(error);
      }
      // Only failed attempts stay counted against the address's failure allowance.
      if (failureCounted && res.status !== 401) counters.refund('auth-failures', req.clientAddress, failureCounted.resetAt);
      const finished = finish(res, requestId, limits);
      // Forced examples are the spec's own (Prism checked them as it made them).
      if (route !== null && !('allow' in route) && !forced(req) && options.examples.check) {
        const problems = await options.examples.check(req, route, finished);
        if (problems.length > 0) options.onViolation?.(req, finished, problems);
      }
      return finished;
    },
  };
}

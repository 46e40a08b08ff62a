/**
 * Prism, in process, as the mock's source of examples and its judge: every request is validated
 * by Prism against the bundled document, answers the state does not make come from Prism's mock
 * (the named example, `Prefer: dynamic=true` data, ...), and every answer the mock sends, the
 * state's included, is checked with Prism's response validator.
 */
import prismCore from '@stoplight/prism-core';
import prismHttp from '@stoplight/prism-http';
import httpConfig from '@stoplight/prism-http-server/dist/getHttpConfigFromRequest.js';
import prismValidator from '@stoplight/prism-http/dist/validator/index.js';
import { configureExtensionsUserProvided } from '@stoplight/prism-cli/dist/extensions.js';
import type { Writable } from 'node:stream';
import type { Route } from '../sdk/src/mock/routes.ts';
import type { ExampleSource, MockRequest, Problem } from '../sdk/src/mock/service.ts';
import type { MockResponse } from '../sdk/src/mock/answers.ts';
import type { MockableDocument } from './document.ts';
import { indexExamples, preferWithCode } from './prefer.ts';

interface Diagnostic {
  path?: (string | number)[];
  code?: string | number;
  message: string;
  severity: number;
}

interface PrismOutput {
  statusCode: number;
  headers?: Record<string, string>;
  body?: unknown;
}

interface PrismResult {
  output: PrismOutput;
  validations: { input: Diagnostic[]; output: Diagnostic[] };
}

interface PrismOperation {
  method: string;
  path: string;
}

type Either<L, R> = { _tag: 'Left'; left: L } | { _tag: 'Right'; right: R };

/** Severity 0 is an error in Prism's (Stoplight's) diagnostics. */
const ERROR = 0;

/** Prism's request violation paths as the contract's JSON Pointers: /body/…, /query/…, /path/…, /headers/…. */
function pointer(path: (string | number)[] = []): string {
  const [where, ...rest] = path.map(String);
  const section = where === 'header' ? 'headers' : where;
  return '/' + [section, ...rest].filter((p) => p !== undefined).map((p) => p!.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

export interface PrismExampleOptions {
  /** Generate every answer from the schemas (like `prism mock --dynamic`). */
  dynamic?: boolean;
  /** Where Prism's log lines go (pino JSON lines); silent without. */
  logStream?: Writable;
  name: string;
  /** The API's base path, which the mocked document's paths carry. */
  basePath: string;
}

export async function prismExamples(mocked: MockableDocument, options: PrismExampleOptions): Promise<ExampleSource> {
  // Prism dereferences the document in place: give it its own copies.
  const operations = (await prismHttp.getHttpOperationsFromSpec(structuredClone(mocked))) as unknown as PrismOperation[];
  // As `prism mock` does: x-json-schema-faker options, and no invented properties in dynamic answers.
  await configureExtensionsUserProvided(structuredClone(mocked), { fillProperties: false });
  const logger = prismCore.createLogger(options.name, { level: options.logStream ? 'info' : 'silent' }, options.logStream);
  const prism = prismHttp.createInstance(
    { validateRequest: true, validateResponse: true, checkSecurity: false, errors: false, upstreamProxy: undefined, isProxy: false, mock: { dynamic: options.dynamic ?? false } },
    { logger },
  );
  const index = indexExamples(mocked);
  const asked = new WeakMap<MockRequest, Promise<Either<{ status?: number; name?: string; message?: string }, PrismResult>>>();

  function ask(req: MockRequest): Promise<Either<{ status?: number; name?: string; message?: string }, PrismResult>> {
    let answer = asked.get(req);
    if (!answer) {
      const headers: Record<string, string> = {};
      req.headers.forEach((value, name) => (headers[name] = value));
      const prefer = preferWithCode(index, req.method, req.url.pathname, headers.prefer);
      if (prefer !== undefined) headers.prefer = prefer;
      const query: Record<string, string | string[]> = {};
      for (const name of new Set(req.url.searchParams.keys())) {
        const values = req.url.searchParams.getAll(name);
        query[name] = values.length === 1 ? values[0]! : values;
      }
      let body: unknown = req.body;
      if (req.body !== undefined && /json/i.test(headers['content-type'] ?? '')) {
        try {
          body = JSON.parse(req.body);
        } catch {
          body = req.body;
        }
      }
      const input = { method: req.method.toLowerCase(), url: { path: req.url.pathname, query }, headers, body };
      const config = httpConfig.getHttpConfigFromRequest(input);
      answer =
        config._tag === 'Left'
          ? Promise.resolve(config)
          : (prism.request(input as never, operations as never, { mock: { dynamic: options.dynamic ?? false, ...config.right } } as never)() as Promise<never>);
      asked.set(req, answer);
    }
    return answer;
  }

  return {
    async validate(req: MockRequest): Promise<Problem[]> {
      const result = await ask(req);
      if (result._tag === 'Left') return [];
      return result.right.validations.input
        .filter((d) => d.severity === ERROR && d.code !== 415 && d.code !== 401)
        .map((d) => ({ path: pointer(d.path), message: d.message }));
    },

    async example(req: MockRequest): Promise<MockResponse> {
      const result = await ask(req);
      if (result._tag === 'Left') {
        const error = result.left;
        return {
          status: error.status ?? 500,
          headers: {},
          contentType: 'application/problem+json',
          body: { type: error.name ?? 'about:blank', title: error.message ?? 'Prism could not answer', status: error.status ?? 500 },
        };
      }
      const { output } = result.right;
      const headers = { ...output.headers };
      delete headers['Content-type'];
      delete headers['content-type'];
      return { status: output.statusCode, headers, body: output.body };
    },

    async check(req: MockRequest, route: Route, res: MockResponse): Promise<string[]> {
      const operation = operations.find((o) => o.method === route.op.method && o.path === options.basePath + route.op.path);
      if (!operation) return [`no Prism operation for ${route.operationId}`];
      const headers: Record<string, string> = { 'content-type': res.contentType ?? 'application/json; charset=utf-8' };
      for (const [name, value] of Object.entries(res.headers)) headers[name.toLowerCase()] = value;
      const verdict = prismValidator.validateOutput({ resource: operation as never, element: { statusCode: res.status, headers, body: res.body } }) as Either<Diagnostic[], unknown>;
      if (verdict._tag === 'Right') return [];
      return verdict.left.filter((d) => d.severity === ERROR).map((d) => `${pointer(d.path)} ${d.message}`);
    },
  };
}

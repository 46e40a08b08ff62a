/**
 * MSW handlers generated from the spec: one per operation of both APIs, answering with the same
 * behaviour as the mock server (`npm run mock`): tokens the mock minted are required, jobs
 * advance queued → running → completed with progress and can be cancelled, completed backups
 * list files and restore, rate limits count down and answer 429 with headers that agree,
 * newsletter and contact forms keep what they receive. Operations the state does not model
 * answer their first example; `Prefer: example=<name>` or `code=<status>` picks another.
 *
 *   import { setupServer } from 'msw/node';            // or setupWorker from 'msw/browser'
 *   import { createMockHandlers } from '@backup-service/client/msw';
 *   const mock = createMockHandlers({ jobSeconds: 1 });
 *   const server = setupServer(...mock.handlers);
 */
import { http, HttpResponse, type HttpHandler } from 'msw';
import { mockApis } from '../../../generated/mock-operations.ts';
import { createMockService, type MockService } from '../mock/service.ts';
import type { ApiName } from '../mock/routes.ts';
import { tableExamples } from '../mock/table-examples.ts';
import type { MockOptions } from '../mock/types.ts';

export type { MockOptions } from '../mock/types.ts';

export interface MockHandlersOptions extends MockOptions {
  /** Where the Backup API is called (default http://localhost:8080/api/v1). A path alone matches any origin in a browser. */
  backupUrl?: string;
  /** The origin the public tools are called at (default http://localhost:8080). */
  toolsUrl?: string;
}

export interface MockHandlers {
  /** Hand these to setupServer (msw/node) or setupWorker (msw/browser). */
  handlers: HttpHandler[];
  /** Forgets every token, job, subscriber, message and rate-limit count (e.g. in afterEach). */
  reset(): void;
  /** The state behind the handlers (e.g. service.tools.messages). */
  service: MockService;
}

const METHODS = { get: http.get, post: http.post, put: http.put, patch: http.patch, delete: http.delete } as const;

export function createMockHandlers(options: MockHandlersOptions = {}): MockHandlers {
  const service = createMockService({ ...options, apis: mockApis, examples: tableExamples });
  const urls: Record<ApiName, string> = {
    backup: options.backupUrl ?? `http://localhost:8080${mockApis.backup.basePath}`,
    tools: options.toolsUrl ?? 'http://localhost:8080',
  };
  const handlers: HttpHandler[] = [];
  for (const api of Object.keys(mockApis) as ApiName[]) {
    const { basePath, operations } = mockApis[api];
    const url = urls[api].replace(/\/+$/, '');
    if (!url.endsWith(basePath)) throw new Error(`the ${api} URL must end with the API's base path ${basePath}: ${url}`);
    // What comes before the base path: an origin, a path prefix, or both.
    const root = url.slice(0, url.length - basePath.length);
    const prefix = new URL(root || '/', 'http://relative.invalid').pathname.replace(/\/$/, '');
    for (const op of Object.values(operations)) {
      const register = METHODS[op.method as keyof typeof METHODS];
      if (!register) continue;
      handlers.push(
        register(root + basePath + op.path.replace(/\{([^}]+)\}/g, ':$1'), async ({ request }) => {
          const body = request.body === null ? undefined : await request.text();
          const called = new URL(request.url);
          const answer = await service.handle({
            api,
            method: request.method,
            url: new URL(called.pathname.slice(prefix.length) + called.search, 'http://mock.invalid'),
            headers: request.headers,
            ...(body === undefined ? {} : { body }),
            bodyBytes: body === undefined ? 0 : new TextEncoder().encode(body).length,
            clientAddress: '127.0.0.1',
          });
          const headers = new Headers(answer.headers);
          if (answer.body === undefined) return new HttpResponse(null, { status: answer.status, headers });
          headers.set('Content-Type', answer.contentType ?? 'application/json; charset=utf-8');
          return new HttpResponse(JSON.stringify(answer.body), { status: answer.status, headers });
        }),
      );
    }
  }
  return { handlers, reset: () => service.reset(), service };
}

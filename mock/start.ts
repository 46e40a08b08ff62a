/**
 * The mock: the Backup API and the public tools API, each on its own port, at the same paths
 * as the real server, from the bundled documents in generated/. One state layer (shared with the
 * SDK's MSW handlers) answers what a frontend builds screens for, Prism validates every request
 * and answer and serves the examples of everything else.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createMockService, type MockService } from '../sdk/src/mock/service.ts';
import type { MockOptions } from '../sdk/src/mock/types.ts';
import type { ApiName } from '../sdk/src/mock/routes.ts';
import { RESET_PATH, startFront } from './front.ts';
import { mockDocument, serverBasePath, type MockableDocument } from './document.ts';
import { prismExamples } from './prism-examples.ts';
import { mockOperationTable } from '../scripts/gen/mock-table.ts';
import type { OpenApiDocument } from '../scripts/gen/apis.ts';

export type MockApi = ApiName;
export { RESET_PATH };

export interface StartMockOptions extends MockOptions {
  /** Port of the Backup API mock (default 4010; 0 picks a free one). */
  backupPort?: number;
  /** Port of the public tools mock (default 4011; 0 picks a free one). */
  toolsPort?: number;
  host?: string;
  /** Generate every example answer from the schemas instead of the examples (like `prism mock --dynamic`). */
  dynamic?: boolean;
  /** Where the bundled documents are (default: generated/ of this project). */
  generatedDir?: string;
  /** Receives Prism's log lines and the mock's own warnings; omit to stay silent. */
  log?: (api: MockApi, level: string, message: string) => void;
}

export interface RunningMock {
  /** Base URL of the Backup API, server path included (e.g. http://127.0.0.1:4010/api/v1). */
  backupUrl: string;
  /** Origin of the public tools API (its paths carry /api/...). */
  toolsUrl: string;
  /** The state behind both APIs. */
  service: MockService;
  /** Forgets all state (as `POST /__mock/reset` does). */
  reset(): void;
  /** Answers that broke the spec so far (each also logged); a correct mock has none. */
  violations: string[];
  close(): Promise<void>;
}

const DEFAULT_GENERATED = fileURLToPath(new URL('../generated/', import.meta.url));
const PINO_LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

export async function loadDocument(api: MockApi, generatedDir = DEFAULT_GENERATED): Promise<MockableDocument> {
  const text = await readFile(join(generatedDir, `${api}.openapi.json`), 'utf8');
  return JSON.parse(text) as MockableDocument;
}

/** A pino destination that hands each line to `log` as (level, message). */
function logStream(api: MockApi, log: StartMockOptions['log']): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        try {
          const entry = JSON.parse(line) as { level?: number | string; msg?: string };
          const level = typeof entry.level === 'number' ? (PINO_LEVELS[entry.level] ?? 'info') : String(entry.level);
          log?.(api, level, entry.msg ?? '');
        } catch {
          log?.(api, 'info', line);
        }
      }
      done();
    },
  });
}

export async function startMock(options: StartMockOptions = {}): Promise<RunningMock> {
  const apis: MockApi[] = ['backup', 'tools'];
  const documents = await Promise.all(apis.map((api) => loadDocument(api, options.generatedDir)));
  const sources = await Promise.all(
    apis.map(async (api, i) => {
      const document = documents[i]!;
      return prismExamples(mockDocument(document), {
        name: api.toUpperCase(),
        basePath: serverBasePath(document),
        dynamic: options.dynamic,
        ...(options.log ? { logStream: logStream(api, options.log) } : {}),
      });
    }),
  );
  const violations: string[] = [];
  const service = createMockService({
    ...options,
    // The operations of the documents served, so a document of another directory is mocked as it is.
    apis: {
      backup: mockOperationTable(documents[0] as unknown as OpenApiDocument),
      tools: mockOperationTable(documents[1] as unknown as OpenApiDocument),
    },
    examples: {
      validate: (req, route) => sources[apis.indexOf(req.api)]!.validate(req, route),
      example: (req, route) => sources[apis.indexOf(req.api)]!.example(req, route),
      check: (req, route, res) => sources[apis.indexOf(req.api)]!.check!(req, route, res),
    },
    onViolation: (req, res, problems) => {
      const line = `${req.method} ${req.url.pathname} → ${res.status}: ${problems.join('; ')}`;
      violations.push(line);
      options.log?.(req.api, 'error', `answer breaks the spec: ${line}`);
    },
  });
  const host = options.host ?? '127.0.0.1';
  const backup = await startFront('backup', service, { host, port: options.backupPort ?? 4010 });
  let tools;
  try {
    tools = await startFront('tools', service, { host, port: options.toolsPort ?? 4011 });
  } catch (error) {
    await backup.close();
    throw error;
  }
  return {
    backupUrl: backup.origin + serverBasePath(documents[0]!),
    toolsUrl: tools.origin,
    service,
    reset: () => service.reset(),
    violations,
    close: async () => {
      await Promise.all([backup.close(), tools.close()]);
    },
  };
}

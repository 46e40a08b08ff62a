/**
 * Runs Prism in this process: the Backup API and the public tools API, each on its own port,
 * from the bundled documents in generated/, at the same paths as the real server.
 */
import prismCore from '@stoplight/prism-core';
import prismHttp from '@stoplight/prism-http';
import prismServer from '@stoplight/prism-http-server';
import { configureExtensionsUserProvided } from '@stoplight/prism-cli/dist/extensions.js';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { startFront } from './front.ts';
import { mockDocument, serverBasePath, type MockableDocument } from './document.ts';

export type MockApi = 'backup' | 'tools';

export interface MockOptions {
  /** Port of the Backup API mock (default 4010; 0 picks a free one). */
  backupPort?: number;
  /** Port of the public tools mock (default 4011; 0 picks a free one). */
  toolsPort?: number;
  host?: string;
  /** Generate every answer from the schemas instead of the examples (like `prism mock --dynamic`). */
  dynamic?: boolean;
  /** Where the bundled documents are (default: generated/ of this project). */
  generatedDir?: string;
  /** Receives Prism's log lines; omit to stay silent. */
  log?: (api: MockApi, level: string, message: string) => void;
}

export interface RunningMock {
  /** Base URL of the Backup API, server path included (e.g. http://127.0.0.1:4010/api/v1). */
  backupUrl: string;
  /** Origin of the public tools API (its paths carry /api/...). */
  toolsUrl: string;
  close(): Promise<void>;
}

const DEFAULT_GENERATED = fileURLToPath(new URL('../generated/', import.meta.url));
const PINO_LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

export async function loadDocument(api: MockApi, generatedDir = DEFAULT_GENERATED): Promise<MockableDocument> {
  const text = await readFile(join(generatedDir, `${api}.openapi.json`), 'utf8');
  return JSON.parse(text) as MockableDocument;
}

/** A pino destination that hands each line to `log` as (level, message). */
function logStream(api: MockApi, log: MockOptions['log']): Writable {
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

async function startOne(
  api: MockApi,
  port: number,
  options: MockOptions,
): Promise<{ origin: string; basePath: string; close: () => Promise<void> }> {
  const document = await loadDocument(api, options.generatedDir);
  const mocked = mockDocument(document);
  // Prism dereferences the document in place: give it its own copy.
  const operations = await prismHttp.getHttpOperationsFromSpec(structuredClone(mocked));
  // As `prism mock` does: x-json-schema-faker options, and no invented properties in dynamic answers.
  await configureExtensionsUserProvided(structuredClone(mocked), { fillProperties: false });
  const logger = prismCore.createLogger(
    api.toUpperCase(),
    { level: options.log ? 'info' : 'silent' },
    logStream(api, options.log),
  );
  const server = prismServer.createServer(operations, {
    cors: true,
    components: { logger },
    config: {
      validateRequest: true,
      validateResponse: true,
      checkSecurity: true,
      errors: false,
      upstreamProxy: undefined,
      isProxy: false,
      mock: { dynamic: options.dynamic ?? false },
    },
  });
  // Prism listens on an internal loopback port; the front takes the public one.
  const internal = new URL(await server.listen(0, '127.0.0.1'));
  try {
    const front = await startFront(mocked, { host: '127.0.0.1', port: Number(internal.port) }, {
      host: options.host ?? '127.0.0.1',
      port,
    });
    return {
      origin: front.origin,
      basePath: serverBasePath(document),
      close: async () => {
        await front.close();
        await server.close();
      },
    };
  } catch (error) {
    await server.close();
    throw error;
  }
}

export async function startMock(options: MockOptions = {}): Promise<RunningMock> {
  const backup = await startOne('backup', options.backupPort ?? 4010, options);
  let tools;
  try {
    tools = await startOne('tools', options.toolsPort ?? 4011, options);
  } catch (error) {
    await backup.close();
    throw error;
  }
  return {
    backupUrl: backup.origin + backup.basePath,
    toolsUrl: tools.origin + tools.basePath,
    close: async () => {
      await Promise.all([backup.close(), tools.close()]);
    },
  };
}

// The two API documents and how to bundle them: shared by generation, the breaking-change
// check and the contract tests, so every one of them reads the same bundle.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

export interface Api {
  /** File-name prefix in generated/ and openapi/released/. */
  name: string;
  /** The api alias in redocly.yaml. */
  alias: string;
  /** Prefix of the generated TypeScript names (BackupOperations, backupOperations). */
  typeName: string;
  /** Root document, relative to the project root. */
  source: string;
}

export const apis: readonly Api[] = [
  { name: 'backup', alias: 'backup@v1', typeName: 'Backup', source: 'openapi/backup/openapi.yaml' },
  { name: 'tools', alias: 'tools@v1', typeName: 'Tools', source: 'openapi/tools/openapi.yaml' },
];

export const projectRoot = resolve(import.meta.dirname, '../..');

const redoclyCli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');
const run = promisify(execFile);

/** Runs the Redocly CLI with `cwd` as working directory; rejects with its output on failure. */
export async function redocly(args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await run(process.execPath, [redoclyCli, ...args], {
      cwd,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true', NO_COLOR: '1' },
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`redocly ${args.join(' ')} failed:\n${e.stderr || e.stdout || e.message}`, { cause: err });
  }
}

export type OpenApiDocument = Record<string, unknown> & {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, unknown>>;
};

/**
 * Bundles one API of the project at `root` with `redocly bundle <alias>` (redocly.yaml decides
 * decorators): one document, external files pulled into components, internal $refs kept.
 */
export async function bundleApi(root: string, api: Api): Promise<OpenApiDocument> {
  const dir = await mkdtemp(join(tmpdir(), 'bundle-'));
  try {
    const out = join(dir, `${api.name}.json`);
    await redocly(['bundle', api.alias, '--config', join(root, 'redocly.yaml'), '--ext', 'json', '-o', out], root);
    return JSON.parse(await readFile(out, 'utf8')) as OpenApiDocument;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

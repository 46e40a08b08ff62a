// The breaking-change check: the current documents against the released baseline (this is how
// `npm test` runs it), and proof that it fails on breaking changes and passes on additions.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diffDocuments, releasedDir } from './api-diff.ts';
import { projectRoot, type OpenApiDocument } from './gen/apis.ts';
import { exec, type Ran } from './testing/exec.ts';

type Node = Record<string, unknown>;

let tmp: string;
let baseline: string;
let released: OpenApiDocument;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'api-diff-test-'));
  baseline = join(releasedDir, 'backup.openapi.json');
  released = JSON.parse(await readFile(baseline, 'utf8')) as OpenApiDocument;
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Writes a changed copy of the released Backup API and diffs it against the baseline. */
async function diffChanged(name: string, change: (doc: OpenApiDocument) => void) {
  const doc = structuredClone(released);
  change(doc);
  const file = join(tmp, `${name}.json`);
  await writeFile(file, JSON.stringify(doc, null, 2));
  return diffDocuments(baseline, file);
}

/** The createBackup request body schema, followed through its $ref to the component. */
function createBackupBody(doc: OpenApiDocument): { required?: string[]; properties: Node } {
  const post = doc.paths['/backup']?.post as { requestBody: { content: Record<string, { schema: Node }> } };
  let schema: Node = post.requestBody.content['application/json']?.schema as Node;
  while (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').pop() as string;
    schema = (doc.components as { schemas: Record<string, Node> }).schemas[name] as Node;
  }
  return schema as { required?: string[]; properties: Node };
}

describe('npm run diff:api', () => {
  it('passes for the current documents against openapi/released/', async () => {
    const result = await exec(process.execPath, [join(projectRoot, 'scripts/api-diff.ts')], { cwd: projectRoot });
    expect(result.out).toMatch(/backup@v1: .*: ok/);
    expect(result.out).toMatch(/tools@v1: .*: ok/);
    expect(result.code).toBe(0);
  });
});

describe('diffDocuments', () => {
  it('fails when an operation is removed', async () => {
    const result = await diffChanged('removed-operation', (doc) => {
      delete doc.paths['/backup/{id}/cancel'];
    });
    expect(result.ok).toBe(false);
    expect(result.breaking.map((b) => b.message).join('\n')).toMatch(/\/backup\/\{id\}\/cancel/);
  });

  it('fails when a request field becomes required', async () => {
    const result = await diffChanged('newly-required', (doc) => {
      const body = createBackupBody(doc);
      expect(body.required ?? []).not.toContain('destination');
      body.required = [...(body.required ?? []), 'destination'];
    });
    expect(result.ok).toBe(false);
    expect(result.breaking.map((b) => b.message).join('\n')).toMatch(/destination/);
  });

  it('passes when an optional request field is added', async () => {
    const result = await diffChanged('optional-field', (doc) => {
      createBackupBody(doc).properties.label = { type: 'string', maxLength: 100, description: 'A name for the backup.' };
    });
    expect(result.breaking).toEqual([]);
    expect(result.bump).toBe('minor');
    expect(result.ok).toBe(true);
  });

  it('passes a breaking change when the major of info.version was raised', async () => {
    const result = await diffChanged('new-major', (doc) => {
      delete doc.paths['/backup/{id}/cancel'];
      doc.info.version = `${Number.parseInt(released.info.version, 10) + 1}.0.0`;
    });
    expect(result.breaking.length).toBeGreaterThan(0);
    expect(result.ok).toBe(true);
  });

  it('lets the error catalogue gain a code, as the compatibility policy allows, but no other response enum', async () => {
    const schemas = (doc: OpenApiDocument) => (doc.components as { schemas: Record<string, { enum: string[] }> }).schemas;
    const code = await diffChanged('new-error-code', (doc) => {
      schemas(doc).ErrorCode!.enum.push('SOMETHING_NEW');
    });
    expect(code.breaking).toEqual([]);
    expect(code.ok).toBe(true);
    const status = await diffChanged('new-job-status', (doc) => {
      schemas(doc).JobStatus!.enum.push('paused');
    });
    expect(status.ok).toBe(false);
    expect(status.breaking.map((b) => b.ruleId)).toContain('enum-values-added');
  });
});

describe('api-diff <base> <head> (the command for any repository)', () => {
  function apiDiff(args: string[], via: 'npx' | 'node' = 'node'): Promise<Ran> {
    if (via === 'npx') return exec('npx', ['--no-install', 'api-diff', ...args], { cwd: projectRoot });
    return exec(process.execPath, [join(projectRoot, 'scripts/api-diff.ts'), ...args], { cwd: projectRoot });
  }

  async function write(name: string, change: (doc: OpenApiDocument) => void): Promise<string> {
    const doc = structuredClone(released);
    change(doc);
    const file = join(tmp, `${name}.json`);
    await writeFile(file, JSON.stringify(doc, null, 2));
    return file;
  }

  it('exits 1 on a breaking pair and says what breaks, fit for a pull-request comment', async () => {
    const head = await write('pr-breaking', (doc) => {
      delete doc.paths['/backup/{id}/cancel'];
    });
    const result = await apiDiff([baseline, head, '--format', 'markdown'], 'npx');
    expect(result.code).toBe(1);
    expect(result.out).toMatch(/^### Backup API: 1\.0\.0 → 1\.0\.0 — ❌ \d+ breaking change/m);
    expect(result.out).toContain('**Breaking** (need a new major version):\n\n- `/backup/{id}/cancel`: Path `/backup/{id}/cancel` was removed. (path-removed)');
  });

  it('exits 0 on a compatible pair and lists what was added', async () => {
    const head = await write('pr-compatible', (doc) => {
      createBackupBody(doc).properties.label = { type: 'string', maxLength: 100, description: 'A name for the backup.' };
      doc.info.version = '1.1.0';
    });
    const markdown = await apiDiff([baseline, head, '--format', 'markdown']);
    expect(markdown.code).toBe(0);
    expect(markdown.out).toMatch(/1\.0\.0 → 1\.1\.0 — ✅ no breaking change \(a minor release\)/);
    expect(markdown.out).toMatch(/\*\*Added\*\*:\n\n- `schema CreateBackupRequest › properties › label`: added/);
    const text = await apiDiff([baseline, head]);
    expect(text).toMatchObject({ code: 0, stdout: 'Backup API: 1.0.0 → 1.1.0, changes need a minor release: ok\n' });
  });
});

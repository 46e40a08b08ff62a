// The contract itself, over the bundled documents: examples match their schemas, both APIs
// share one envelope and error catalogue, and every operation of the brief is there.
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { apis, bundleApi, projectRoot, type OpenApiDocument } from './gen/apis.ts';
import { basePath, operationRows } from './gen/handler-table.ts';
import { validateExamples } from './contract/examples.ts';

const bundles: Record<string, OpenApiDocument> = {};
beforeAll(async () => {
  for (const api of apis) bundles[api.name] = await bundleApi(projectRoot, api);
});
const bundle = (name: string): OpenApiDocument => bundles[name] as OpenApiDocument;

// The operations of the brief (contract.md): operationId, method, path.
const BRIEF: Record<string, [string, string, string][]> = {
  backup: [
    ['createToken', 'post', '/auth/token'],
    ['createBackup', 'post', '/backup'],
    ['listBackups', 'get', '/backup'],
    ['getBackup', 'get', '/backup/{id}'],
    ['cancelBackup', 'post', '/backup/{id}/cancel'],
    ['createRestore', 'post', '/restore'],
    ['getRestore', 'get', '/restore/{id}'],
    ['listFiles', 'get', '/files'],
    ['getStatus', 'get', '/status'],
    ['deleteBackup', 'delete', '/backup/{id}'],
    ['submitRetentionPolicy', 'post', '/retention'],
    ['createPrune', 'post', '/prune'],
    ['createCheck', 'post', '/check'],
    ['getMaintenanceJob', 'get', '/maintenance/{id}'],
    ['cancelMaintenanceJob', 'post', '/maintenance/{id}/cancel'],
    ['getUsage', 'get', '/usage'],
  ],
  tools: [
    ['checkSite', 'post', '/api/tools/check-site'],
    ['getIpInfo', 'get', '/api/tools/ip-info'],
    ['subscribeNewsletter', 'post', '/api/newsletter/subscribe'],
    ['submitContact', 'post', '/api/contacts/{type}'],
    // The health probes at the site origin (docs/operations.md).
    ['getLiveness', 'get', '/livez'],
    ['getReadiness', 'get', '/readyz'],
  ],
};

// The error catalogue of the brief.
const CATALOGUE = [
  'VALIDATION_ERROR', 'INVALID_JSON', 'UNAUTHORIZED', 'TOKEN_EXPIRED', 'INVALID_CREDENTIALS',
  'SOURCE_NOT_ALLOWED', 'TARGET_NOT_ALLOWED', 'NOT_FOUND', 'BACKUP_NOT_FOUND', 'RESTORE_NOT_FOUND',
  'BACKUP_NOT_COMPLETED', 'JOB_FINISHED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE',
  'INVALID_SOURCE', 'INVALID_TARGET', 'URL_NOT_ALLOWED', 'DESTINATION_UNAVAILABLE',
  'RATE_LIMITED', 'INTERNAL_ERROR', 'SERVICE_UNAVAILABLE',
];

/** The shared definitions every response body is built from. */
const ENVELOPES = ['SuccessEnvelope', 'ErrorEnvelope'];

type Node = Record<string, unknown>;
const isObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

function deref(doc: unknown, node: unknown): unknown {
  if (!isObject(node) || typeof node.$ref !== 'string') return node;
  const target = node.$ref.slice(2).split('/').reduce<unknown>((cur, part) => (isObject(cur) ? cur[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), doc);
  return deref(doc, target);
}

/** The component schema names a schema is, or is composed from with allOf. */
function composedOf(doc: unknown, schema: unknown): string[] {
  if (!isObject(schema)) return [];
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').pop() as string;
    return [name, ...composedOf(doc, deref(doc, schema))];
  }
  return Array.isArray(schema.allOf) ? schema.allOf.flatMap((s) => composedOf(doc, s)) : [];
}

/** Every response of every operation: status and its JSON body schema. */
function responses(doc: OpenApiDocument): { where: string; status: string; schema: unknown }[] {
  const out: { where: string; status: string; schema: unknown }[] = [];
  for (const row of operationRows(doc)) {
    const op = doc.paths[row.path]?.[row.method] as { responses: Node };
    for (const [status, ref] of Object.entries(op.responses)) {
      const response = deref(doc, ref) as { content?: Record<string, { schema?: unknown }> };
      out.push({ where: `${row.operationId} ${status}`, status, schema: response.content?.['application/json']?.schema });
    }
  }
  return out;
}

/** Files reachable by $ref from `file`, as paths relative to the project root. */
async function refClosure(file: string, seen = new Set<string>()): Promise<Set<string>> {
  const rel = relative(projectRoot, file);
  if (seen.has(rel)) return seen;
  seen.add(rel);
  const refs: string[] = [];
  const collect = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(collect);
    else if (isObject(node)) {
      if (typeof node.$ref === 'string' && !node.$ref.startsWith('#')) refs.push(node.$ref.split('#')[0] as string);
      Object.values(node).forEach(collect);
    }
  };
  collect(parse(await readFile(file, 'utf8')));
  for (const ref of refs) await refClosure(resolve(dirname(file), ref), seen);
  return seen;
}

describe.each(apis.map((api) => [api.name, api] as const))('%s API', (name, api) => {
  it('has every operation of the brief with its method and path, and nothing else', () => {
    const found = operationRows(bundle(name)).map((r) => [r.operationId, r.method, r.path]);
    expect(found.sort()).toEqual([...(BRIEF[name] ?? [])].sort());
  });

  it('is served under the base path of the brief', () => {
    expect(basePath(bundle(name))).toBe(name === 'backup' ? '/api/v1' : '');
  });

  it('has examples that all validate against their schemas (Ajv 2020, formats)', () => {
    const { checked, problems } = validateExamples(bundle(name));
    expect(problems).toEqual([]);
    // At least one example per operation: a validator that finds nothing proves nothing.
    expect(checked).toBeGreaterThanOrEqual(operationRows(bundle(name)).length);
  });

  it('answers every status with the shared envelope: errors with ErrorEnvelope, successes with SuccessEnvelope', () => {
    for (const { where, status, schema } of responses(bundle(name))) {
      if (schema === undefined) continue; // a response without a body
      const parts = composedOf(bundle(name), schema);
      expect(parts, where).toContain(/^[45]/.test(status) ? 'ErrorEnvelope' : 'SuccessEnvelope');
    }
  });

  it('takes the envelopes and the error catalogue from the files in openapi/shared/', async () => {
    const files = await refClosure(join(projectRoot, api.source));
    for (const schema of [...ENVELOPES, 'ErrorCode']) expect(files).toContain(`openapi/shared/schemas/${schema}.yaml`);
    // No API-local definitions of the shared ones.
    const local = await readdir(join(projectRoot, dirname(api.source)), { recursive: true });
    for (const schema of [...ENVELOPES, 'ErrorCode']) expect(local).not.toContain(`schemas/${schema}.yaml`);
  });
});

describe('both APIs', () => {
  it('bundle the shared component schemas identically', () => {
    const backup = bundle('backup').components as { schemas: Node };
    const tools = bundle('tools').components as { schemas: Node };
    for (const schema of [...ENVELOPES, 'ErrorCode']) {
      expect(backup.schemas[schema], schema).toBeDefined();
      expect(tools.schemas[schema], schema).toEqual(backup.schemas[schema]);
    }
    const common = Object.keys(backup.schemas).filter((k) => k in tools.schemas);
    for (const schema of common) expect(tools.schemas[schema], schema).toEqual(backup.schemas[schema]);
  });

  it('share an error catalogue holding every code of the brief', () => {
    const codes = (bundle('backup').components as { schemas: Record<string, { enum?: string[] }> }).schemas.ErrorCode?.enum;
    expect(codes).toEqual(expect.arrayContaining(CATALOGUE));
  });

  it('describe every code once in x-error-catalogue: the enum holds exactly the codes that occur in responses', () => {
    type Entry = { status?: number; in: string[]; meaning: string; action: string };
    const schema = (bundle('backup').components as { schemas: Record<string, { enum: string[]; 'x-error-catalogue': Record<string, Entry> }> }).schemas.ErrorCode!;
    const catalogue = schema['x-error-catalogue'];
    const inResponses = Object.entries(catalogue).filter(([, e]) => e.in.includes('response')).map(([code]) => code);
    expect([...schema.enum].sort()).toEqual(inResponses.sort());
    for (const [code, e] of Object.entries(catalogue)) {
      expect(code).toMatch(/^[A-Z][A-Z0-9_]*$/);
      expect(e.meaning.length, code).toBeGreaterThan(10);
      expect(e.action.length, code).toBeGreaterThan(10);
      if (e.in.includes('response')) expect(e.status, code).toBeGreaterThanOrEqual(400);
      else expect(e.status, code).toBeUndefined();
    }
  });
});

describe('the example check', () => {
  it('fails on a deliberately invalid example', () => {
    const doc = structuredClone(bundle('backup'));
    const post = doc.paths['/backup']?.post as { requestBody: { content: Record<string, { examples?: Record<string, unknown> }> } };
    const named = Object.entries(post.requestBody.content['application/json']?.examples ?? {});
    expect(named.length).toBeGreaterThan(0);
    const [exampleName, ref] = named[0] as [string, unknown];
    const example = deref(doc, ref) as { value: Node };
    example.value = { ...example.value, source: 42 };
    const { problems } = validateExamples(doc);
    expect(problems.map((p) => p.at)).toContain(`#/paths/~1backup/post/requestBody/content/application~1json/examples/${exampleName}`);
    expect(problems.map((p) => p.message).join('\n')).toMatch(/example\/source must be string/);
  });

  it('fails on an invalid schema-level example of a shared schema', () => {
    const doc = structuredClone(bundle('tools'));
    const meta = (doc.components as { schemas: Record<string, { properties: Record<string, { examples?: unknown[] }> }> }).schemas.Meta;
    const timestamp = meta?.properties.timestamp;
    expect(timestamp).toBeDefined();
    (timestamp as { examples?: unknown[] }).examples = ['yesterday'];
    const { problems } = validateExamples(doc);
    expect(problems.map((p) => p.at)).toContain('#/components/schemas/Meta/properties/timestamp/examples/0');
  });
});

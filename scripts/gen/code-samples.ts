// The `x-codeSamples` of every operation (curl and the TypeScript SDK), written into the bundles
// at generation from the operation's own examples: the first request-body example, the
// examples of its path parameters and required query parameters, and the first server URL.
// An operation added to the spec gets its samples the next time `npm run generate` runs; the
// docs test runs every sample against the mock.
import type { OpenApiDocument } from './apis.ts';
import { tsLiteral } from './facts.ts';

type Node = Record<string, unknown>;
const isObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export interface CodeSample {
  lang: string;
  label: string;
  source: string;
}

/** What each API's samples call: the SDK factory and the variable holding the client. */
const CLIENTS: Record<string, { factory: string; variable: string; credentials: boolean }> = {
  backup: { factory: 'createBackupClient', variable: 'backup', credentials: true },
  tools: { factory: 'createToolsClient', variable: 'tools', credentials: false },
};

function deref(doc: OpenApiDocument, node: unknown): unknown {
  for (let i = 0; i < 20 && isObject(node) && typeof node.$ref === 'string' && node.$ref.startsWith('#/'); i++) {
    const ref: string = node.$ref;
    node = ref.slice(2).split('/').reduce<unknown>((cur, part) => (isObject(cur) ? cur[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), doc);
  }
  return node;
}

function parameterExample(doc: OpenApiDocument, parameter: Node): unknown {
  if (isObject(parameter.examples)) {
    const first = deref(doc, Object.values(parameter.examples)[0]);
    if (isObject(first) && 'value' in first) return first.value;
  }
  if ('example' in parameter) return parameter.example;
  const schema = deref(doc, parameter.schema);
  if (isObject(schema)) {
    if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
    if ('example' in schema) return schema.example;
    if (Array.isArray(schema.enum)) return schema.enum[0];
  }
  throw new Error(`parameter ${String(parameter.name)} has no example to build a code sample from`);
}

/** A value as a TypeScript literal, indented like the code around it. */
export function tsValue(value: unknown, indent = ''): string {
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
  if (Array.isArray(value)) return `[${value.map((v) => tsValue(v, indent)).join(', ')}]`;
  if (isObject(value)) {
    const entries = Object.entries(value);
    if (entries.length === 0) return '{}';
    const inner = `${indent}  `;
    const key = (k: string): string => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : tsValue(k));
    return `{\n${entries.map(([k, v]) => `${inner}${key(k)}: ${tsValue(v, inner)},`).join('\n')}\n${indent}}`;
  }
  return JSON.stringify(value ?? null);
}

const shellQuote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

export function codeSamples(doc: OpenApiDocument, api: string, method: string, path: string, op: Node, item: Node): CodeSample[] {
  const server = String((doc.servers as { url: string }[] | undefined)?.[0]?.url ?? '').replace(/\/+$/, '');
  const origin = new URL(server).origin;
  const secured = ((op.security as unknown[] | undefined) ?? (doc.security as unknown[] | undefined) ?? []).length > 0;
  const pathParams: Record<string, unknown> = {};
  const query: Record<string, unknown> = {};
  for (const ref of [...((item.parameters as unknown[]) ?? []), ...((op.parameters as unknown[]) ?? [])]) {
    const parameter = deref(doc, ref);
    if (!isObject(parameter)) continue;
    if (parameter.in === 'path') pathParams[String(parameter.name)] = parameterExample(doc, parameter);
    if (parameter.in === 'query' && parameter.required === true) query[String(parameter.name)] = parameterExample(doc, parameter);
  }
  const requestBody = deref(doc, op.requestBody);
  const media = isObject(requestBody) && isObject(requestBody.content) ? requestBody.content['application/json'] : undefined;
  let body: unknown;
  if (isObject(media)) {
    const first = isObject(media.examples) ? deref(doc, Object.values(media.examples)[0]) : undefined;
    body = isObject(first) && 'value' in first ? first.value : media.example;
  }

  const filled = path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(String(pathParams[name])));
  const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  const url = `${server}${filled}${search ? `?${search}` : ''}`;
  const curl = [`curl -s -X ${method.toUpperCase()} ${shellQuote(url)}`];
  if (secured) curl.push(`-H "Authorization: Bearer $TOKEN"`);
  if (body !== undefined) curl.push(`-H 'Content-Type: application/json'`, `-d ${shellQuote(JSON.stringify(body, null, 2))}`);

  const client = CLIENTS[api];
  if (!client) throw new Error(`no SDK client for the ${api} API`);
  const options: string[] = [];
  const params: string[] = [];
  if (Object.keys(pathParams).length > 0) params.push(`path: ${tsLiteral(pathParams)}`);
  if (Object.keys(query).length > 0) params.push(`query: ${tsLiteral(query)}`);
  if (params.length > 0) options.push(`  params: { ${params.join(', ')} },`);
  if (body !== undefined) options.push(`  body: ${tsValue(body, '  ')},`);
  const settings = [`baseUrl: '${client.credentials ? server : origin}'`];
  if (client.credentials) settings.push('apiKey: process.env.BACKUP_API_KEY!', 'secret: process.env.BACKUP_SECRET!');
  const created = settings.length > 1 ? `{\n${settings.map((s) => `  ${s},`).join('\n')}\n}` : `{ ${settings[0]} }`;
  const call = options.length > 0 ? `${client.variable}.${method.toUpperCase()}('${path}', {\n${options.join('\n')}\n})` : `${client.variable}.${method.toUpperCase()}('${path}')`;
  // An answer without a body (204) has no data to show.
  const success = Object.entries((op.responses as Node | undefined) ?? {}).find(([status]) => /^2/.test(status))?.[1];
  const answers = isObject(deref(doc, success)) && isObject((deref(doc, success) as Node).content);
  const sdk = [
    `import { ${client.factory} } from '@backup-service/client';`,
    '',
    `const ${client.variable} = ${client.factory}(${created});`,
    ...(answers ? [`const { data } = await ${call};`, 'console.log(data!.data);'] : [`await ${call};`]),
  ];
  return [
    { lang: 'Shell', label: 'curl', source: curl.join(' \\\n  ') },
    { lang: 'TypeScript', label: 'SDK', source: sdk.join('\n') },
  ];
}

/** Writes `x-codeSamples` into every operation of a bundle (in place); returns how many got samples. */
export function addCodeSamples(doc: OpenApiDocument, api: string): number {
  let count = 0;
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      op['x-codeSamples'] = codeSamples(doc, api, method, path, op, item);
      count++;
    }
  }
  return count;
}

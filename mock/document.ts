/**
 * Prism ignores the base path of `servers` (by design, see its FAQ and stoplightio/prism#906):
 * a document whose server is `/api/v1` is mocked at `/backup`, not `/api/v1/backup`. The mock
 * therefore serves a copy of the bundled document whose paths carry the server's base path, so
 * it answers at exactly the URLs of the real server.
 */

export interface ServerObject {
  url: string;
  variables?: Record<string, { default: string }>;
}

export interface MockableDocument {
  openapi: string;
  servers?: ServerObject[];
  paths?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The path part of the first server URL, without a trailing slash ('' when it is the origin). */
export function serverBasePath(doc: MockableDocument): string {
  const server = doc.servers?.[0];
  if (!server) return '';
  const url = server.url.replace(/\{([^}]+)\}/g, (_all, name: string) => server.variables?.[name]?.default ?? '');
  const pathname = new URL(url, 'http://mock.invalid').pathname;
  return pathname.replace(/\/+$/, '');
}

/** A copy of `doc` with every path prefixed by the server base path and a server at the mock's root. */
export function mockDocument(doc: MockableDocument): MockableDocument {
  const base = serverBasePath(doc);
  const copy = structuredClone(doc);
  if (base === '') return copy;
  copy.paths = Object.fromEntries(Object.entries(copy.paths ?? {}).map(([path, item]) => [base + path, item]));
  copy.servers = [{ url: '/' }];
  return copy;
}

/** Follows a local `$ref` ("#/components/...") to its target; other values pass through. */
export function resolveRef<T>(doc: object, value: unknown): T | undefined {
  let current: unknown = value;
  for (let hops = 0; hops < 10 && typeof (current as { $ref?: unknown })?.$ref === 'string'; hops += 1) {
    const pointer = (current as { $ref: string }).$ref;
    if (!pointer.startsWith('#/')) break;
    current = pointer
      .slice(2)
      .split('/')
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
  }
  return current as T | undefined;
}


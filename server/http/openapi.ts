import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as OpenApiValidator from 'express-openapi-validator';
import type { RequestHandler } from 'express';

export type OpenApiDocument = {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, unknown>>;
  components?: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
};

export const GENERATED_DIR = join(import.meta.dirname, '..', '..', 'generated');

export function loadDocument(dir: string, name: 'backup' | 'tools'): OpenApiDocument {
  return JSON.parse(readFileSync(join(dir, `${name}.openapi.json`), 'utf8')) as OpenApiDocument;
}

/**
 * One document for the validator holding both APIs, each path under its base path and the
 * server URL at the origin. express-openapi-validator mishandles several specs at once (responses
 * are checked against the first spec's components), so the two are merged; shared components
 * must be identical in both, which the build guarantees (they come from openapi/shared).
 */
export function mergeDocuments(parts: Array<{ doc: OpenApiDocument; basePath: string }>): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  const components: Record<string, Record<string, unknown>> = {};
  for (const { doc, basePath } of parts) {
    for (const [path, item] of Object.entries(doc.paths)) {
      const full = basePath + path;
      if (paths[full]) throw new Error(`Both documents define ${full}`);
      paths[full] = item;
    }
    for (const [section, entries] of Object.entries(doc.components ?? {})) {
      const target = (components[section] ??= {});
      for (const [name, value] of Object.entries(entries)) {
        if (name in target && JSON.stringify(target[name]) !== JSON.stringify(value)) {
          throw new Error(`Component ${section}/${name} differs between the documents`);
        }
        target[name] = value;
      }
    }
  }
  const first = parts[0]!.doc;
  return { openapi: first.openapi, info: { title: 'Backup service', version: first.info.version }, servers: [{ url: '/' }], paths, components };
}

/** Whether the operation at `path` (full, with its base path) and `method` takes a request body. */
export function takesBody(doc: OpenApiDocument, path: string, method: string): boolean {
  const operation = doc.paths[path]?.[method.toLowerCase()] as { requestBody?: unknown } | undefined;
  return operation?.requestBody !== undefined;
}

/**
 * Request validation (always) and response validation (when enabled) against the merged document.
 * Security is checked by our own middleware; undocumented paths are answered by the route guard.
 */
export function openApiValidator(doc: OpenApiDocument, validateResponses: boolean): RequestHandler[] {
  return OpenApiValidator.middleware({
    apiSpec: doc as unknown as Parameters<typeof OpenApiValidator.middleware>[0]['apiSpec'],
    validateApiSpec: true,
    validateRequests: { allowUnknownQueryParameters: false, allErrors: true },
    validateResponses: validateResponses ? { allErrors: true } : false,
    validateSecurity: false,
    ignoreUndocumented: true,
    validateFormats: true,
  }) as RequestHandler[];
}

/** The operations of a bundled OpenAPI document, in document order, for the index page and the docs test. */

export interface ApiDocument {
  info: { title: string; version: string; description?: string };
  servers?: { url: string }[];
  paths?: Record<string, Record<string, unknown>>;
}

export interface OperationSummary {
  operationId: string;
  method: string;
  path: string;
  summary: string;
  /** The first tag (Redoc groups the reference by it). */
  tag: string;
  /** Response status codes the operation documents. */
  statuses: string[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export function listOperations(doc: ApiDocument): OperationSummary[] {
  const ops: OperationSummary[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as
        | { operationId?: string; summary?: string; tags?: string[]; responses?: Record<string, unknown> }
        | undefined;
      if (!op) continue;
      ops.push({
        operationId: op.operationId ?? `${method} ${path}`,
        method: method.toUpperCase(),
        path,
        summary: op.summary ?? '',
        tag: op.tags?.[0] ?? '',
        statuses: Object.keys(op.responses ?? {}),
      });
    }
  }
  return ops;
}

import type { RequestHandler } from 'express';
import { ApiError } from './errors.ts';

export interface RouteShape {
  /** Lower or upper case HTTP method. */
  method: string;
  /** The full OpenAPI path template, e.g. /api/v1/backup/{id}. */
  path: string;
}

function templateToRegExp(template: string): RegExp {
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/**
 * Runs before any operation: a path no operation has answers 404 NOT_FOUND, a known path with
 * another method 405 METHOD_NOT_ALLOWED with Allow (HEAD included: the documents declare none).
 * Matching is exact (case-sensitive, no trailing slash), like the routes and the validator, so
 * no request can reach a handler by a spelling the validator does not recognise.
 */
export function routeGuard(routes: readonly RouteShape[]): RequestHandler {
  const byPath = new Map<string, { re: RegExp; methods: Set<string> }>();
  for (const r of routes) {
    const entry = byPath.get(r.path) ?? { re: templateToRegExp(r.path), methods: new Set<string>() };
    entry.methods.add(r.method.toUpperCase());
    byPath.set(r.path, entry);
  }
  const entries = [...byPath.values()];
  return (req, _res, next) => {
    const path = req.path;
    let matched: Array<Set<string>> | null = null;
    for (const { re, methods } of entries) {
      if (!re.test(path)) continue;
      // Allowed on a path that matches: nothing more to learn.
      if (methods.has(req.method)) {
        next();
        return;
      }
      (matched ??= []).push(methods);
    }
    const allowed = new Set<string>(matched?.flatMap((m) => [...m]));
    if (allowed.size === 0) {
      next(new ApiError('NOT_FOUND', 'No such resource.'));
      return;
    }
    if (!allowed.has(req.method)) {
      const list = [...allowed].sort();
      next(new ApiError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on this path.`, { allowed_methods: list }, { Allow: list.join(', ') }));
      return;
    }
    next();
  };
}

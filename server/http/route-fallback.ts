import type { RequestHandler } from 'express';
import { ApiError } from './errors.ts';

export interface RouteShape {
  method: string;
  /** An OpenAPI path template, e.g. /api/v1/backup/{id}. */
  path: string;
}

function templateToRegExp(template: string): RegExp {
  const escaped = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${escaped}/?$`);
}

/**
 * Mounted after every operation: a known path with another method answers 405 with Allow, anything
 * else 404 NOT_FOUND. HEAD is allowed wherever GET is (Express answers it from the GET route).
 */
export function routeFallback(routes: RouteShape[]): RequestHandler {
  const byPath = new Map<string, { re: RegExp; methods: Set<string> }>();
  for (const r of routes) {
    const entry = byPath.get(r.path) ?? { re: templateToRegExp(r.path), methods: new Set<string>() };
    entry.methods.add(r.method.toUpperCase());
    if (r.method.toUpperCase() === 'GET') entry.methods.add('HEAD');
    byPath.set(r.path, entry);
  }
  return (req, _res, next) => {
    const allowed = new Set<string>();
    for (const { re, methods } of byPath.values()) {
      if (re.test(req.path)) for (const m of methods) allowed.add(m);
    }
    if (allowed.size > 0 && !allowed.has(req.method)) {
      const allow = [...allowed].sort().join(', ');
      next(new ApiError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on this path.`, { allowed_methods: [...allowed].sort() }, { Allow: allow }));
      return;
    }
    next(new ApiError('NOT_FOUND', 'No such resource.'));
  };
}

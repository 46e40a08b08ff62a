import type { Request } from 'express';

/** An operation as Express routes it: method and full Express path (base path included). */
export interface RoutedOperation {
  operationId: string;
  method: string;
  expressPath: string;
}

/** Requests that no operation's route matched (unknown paths, wrong methods). */
export const UNMATCHED = 'unmatched';

/**
 * The operationId of a request, found from the route Express matched; Express keeps it on the
 * request even when a middleware of the route refused it (a 401, a 429). Never the raw path.
 */
export function operationLookup(operations: readonly RoutedOperation[]): (req: Request) => string {
  const byRoute = new Map(operations.map((op) => [`${op.method.toUpperCase()} ${op.expressPath}`, op.operationId]));
  return (req) => {
    const route = (req as { route?: { path?: unknown } }).route?.path;
    return (typeof route === 'string' && byRoute.get(`${req.method} ${route}`)) || UNMATCHED;
  };
}

import type { Request } from 'express';

/** An operation as Express routes it: method and full Express path (base path included). */
export interface RoutedOperation {
  operationId: string;
  method: string;
  expressPath: string;
}

/** Requests that no operation's route matched (unknown paths, wrong methods). */
export const UNMATCHED = 'unmatched';

/** The operations numbered once at start, UNMATCHED last, and the number of a request's operation. */
export interface OperationIndex {
  /** operationIds by number; the last is UNMATCHED. */
  ids: readonly string[];
  indexOf(req: Request): number;
}

/**
 * The operation of a request, found from the route Express matched; Express keeps it on the
 * request even when a middleware of the route refused it (a 401, a 429). Never the raw path.
 * Each Express route object is looked up by its method and path once, then by identity.
 */
export function operationIndex(operations: readonly RoutedOperation[]): OperationIndex {
  const ids = [...operations.map((op) => op.operationId), UNMATCHED];
  const unmatched = ids.length - 1;
  const byRoute = new Map(operations.map((op, i) => [`${op.method.toUpperCase()} ${op.expressPath}`, i]));
  const seen = new WeakMap<object, { method: string; index: number }>();
  const indexOf = (req: Request): number => {
    const route = (req as { route?: { path?: unknown } }).route;
    if (!route) return unmatched;
    const known = seen.get(route);
    if (known && known.method === req.method) return known.index;
    const index = typeof route.path === 'string' ? (byRoute.get(`${req.method} ${route.path}`) ?? unmatched) : unmatched;
    seen.set(route, { method: req.method, index });
    return index;
  };
  return { ids, indexOf };
}

/** The operationId of a request (see operationIndex). */
export function operationLookup({ ids, indexOf }: OperationIndex): (req: Request) => string {
  return (req) => ids[indexOf(req)]!;
}

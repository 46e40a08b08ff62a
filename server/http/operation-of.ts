import type { Request } from 'express';

/** An operation as it is dispatched: method and full OpenAPI path (base path included). */
export interface RoutedOperation {
  operationId: string;
  method: string;
  path: string;
}

/** Requests given to no operation (unknown paths, wrong methods). */
export const UNMATCHED = 'unmatched';

/** The operations numbered once at start, UNMATCHED last, and the number of a request's operation. */
export interface OperationIndex {
  /** operationIds by number; the last is UNMATCHED. */
  ids: readonly string[];
  indexOf(req: Request): number;
  /** Records that `req` was given to the operation numbered `index` (by the dispatcher). */
  choose(req: Request, index: number): void;
}

const OPERATION = Symbol('operation');
type NumberedRequest = Request & { [OPERATION]?: number };

/**
 * The operation of a request, as the dispatcher recorded it when it gave the request to the
 * operation; it stays recorded when a middleware of the operation refused the request (a 401, a
 * 429). Never the raw path.
 */
export function operationIndex(operations: readonly RoutedOperation[]): OperationIndex {
  const ids = [...operations.map((op) => op.operationId), UNMATCHED];
  const unmatched = ids.length - 1;
  return {
    ids,
    indexOf: (req) => (req as NumberedRequest)[OPERATION] ?? unmatched,
    choose: (req, index) => {
      (req as NumberedRequest)[OPERATION] = index;
    },
  };
}

/** The operationId of a request (see operationIndex). */
export function operationLookup({ ids, indexOf }: OperationIndex): (req: Request) => string {
  return (req) => ids[indexOf(req)]!;
}

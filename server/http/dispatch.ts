import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from './errors.ts';

/** An operation as the dispatcher runs it. */
export interface DispatchedOperation {
  /** Lower or upper case HTTP method. */
  method: string;
  /** The full OpenAPI path template, e.g. /api/v1/backup/{id}. */
  path: string;
  /** The operation's middleware and handler, run in order as an Express route runs them. */
  chain: readonly RequestHandler[];
}

interface Compiled {
  index: number;
  method: string;
  re: RegExp;
  params: readonly string[];
  chain: readonly RequestHandler[];
}

function templateToRegExp(template: string): { re: RegExp; params: string[] } {
  const params: string[] = [];
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => {
      if (!part.startsWith('{')) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      params.push(part.slice(1, -1));
      return '([^/]+)';
    })
    .join('');
  return { re: new RegExp(`^${source}$`), params };
}

/** A path parameter decoded as Express's router decodes it; a malformed escape is the client's error. */
function decodeParam(name: string, value: string): string {
  if (value.indexOf('%') === -1) return value;
  try {
    return decodeURIComponent(value);
  } catch (err) {
    if (!(err instanceof URIError)) throw err;
    throw new ApiError('VALIDATION_ERROR', 'The request is not valid.', { errors: [{ path: `/path/${name}`, message: 'is not valid percent-encoding' }] });
  }
}

/**
 * One middleware for every operation: finds the operation of a request's method and path and
 * runs its chain, where one Express route per operation made the router try each route's pattern
 * in turn and run each step of the chain as a layer of its own. What routes did, it does the
 * same way: matching is exact (case-sensitive, no trailing slash), an operation registered
 * earlier wins, path parameters are decoded into req.params as Express decodes them, a step's
 * thrown error or rejected promise goes to the error middleware, `next('route')` leaves the
 * operation. A path no operation has answers 404 NOT_FOUND, a known path with another method
 * 405 METHOD_NOT_ALLOWED with Allow (HEAD included: the documents declare none), before any
 * operation runs. `chosen` is told the number (the position in `operations`) of the operation
 * a request was given to.
 */
export function dispatcher(operations: readonly DispatchedOperation[], chosen: (req: Request, index: number) => void): RequestHandler {
  const compiled: Compiled[] = operations.map((op, index) => ({ index, method: op.method.toUpperCase(), ...templateToRegExp(op.path), chain: op.chain }));
  const run = (op: Compiled, req: Request, res: Response, out: NextFunction): void => {
    const chain = op.chain;
    let i = 0;
    const step = (err?: unknown): void => {
      if (err) {
        out(err === 'route' ? undefined : err);
        return;
      }
      if (i >= chain.length) {
        out();
        return;
      }
      const fn = chain[i++]!;
      try {
        const ret = fn(req, res, step) as unknown;
        if (ret !== null && typeof ret === 'object' && typeof (ret as Promise<unknown>).then === 'function') {
          (ret as Promise<unknown>).then(undefined, (error: unknown) => step(error || new Error('Rejected promise')));
        }
      } catch (thrown) {
        step(thrown);
      }
    };
    step();
  };
  return (req, res, next) => {
    const path = req.path;
    const method = req.method;
    let allowed: Set<string> | null = null;
    for (const op of compiled) {
      const m = op.re.exec(path);
      if (!m) continue;
      if (op.method !== method) {
        (allowed ??= new Set()).add(op.method);
        continue;
      }
      const params: Record<string, string> = Object.create(null) as Record<string, string>;
      try {
        for (let p = 0; p < op.params.length; p++) params[op.params[p]!] = decodeParam(op.params[p]!, m[p + 1]!);
      } catch (err) {
        next(err);
        return;
      }
      req.params = params;
      chosen(req, op.index);
      run(op, req, res, next);
      return;
    }
    if (!allowed) {
      next(new ApiError('NOT_FOUND', 'No such resource.'));
      return;
    }
    const list = [...allowed].sort();
    next(new ApiError('METHOD_NOT_ALLOWED', `${method} is not allowed on this path.`, { allowed_methods: list }, { Allow: list.join(', ') }));
  };
}

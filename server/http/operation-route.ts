import type { Request, RequestHandler, Response } from 'express';
import { ApiError, validationError } from './errors.ts';

/** What every generated handler returns. */
export interface HandlerResult {
  status: number;
  body: unknown;
  headers: Record<string, unknown>;
}

export interface HandlerInput {
  params: unknown;
  query: unknown;
  headers: unknown;
  body: unknown;
}

/**
 * The JSON Pointer of the first number that is not finite (`Infinity`, `1e400`, `NaN`) under
 * `value`, or null. The validator coerces such query values to numbers and lets them pass its
 * bounds, and JSON.parse turns `1e400` into Infinity; no operation accepts one.
 */
export function nonFinitePointer(value: unknown, pointer: string): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : pointer;
  if (value === null || typeof value !== 'object') return null;
  for (const [key, item] of Object.entries(value)) {
    const found = nonFinitePointer(item, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
    if (found) return found;
  }
  return null;
}

type AnyHandler<Ctx> = (req: never, ctx: Ctx) => Promise<HandlerResult>;

/**
 * The last middleware of an operation: hands the validated request to the typed handler and writes
 * its result. A request the validator did not match to this operation never reaches the handler.
 */
export function handlerRoute<Ctx>(handler: AnyHandler<Ctx>, context: (req: Request, res: Response) => Ctx): RequestHandler {
  const call = handler as unknown as (req: HandlerInput, ctx: Ctx) => Promise<HandlerResult>;
  return async (req, res) => {
    if (!(req as Request & { openapi?: unknown }).openapi) throw new ApiError('NOT_FOUND', 'No such resource.');
    const nonFinite = nonFinitePointer(req.query, '/query') ?? nonFinitePointer(req.body, '/body');
    if (nonFinite) throw validationError([{ path: nonFinite, message: 'must be a finite number' }]);
    const input: HandlerInput = { params: req.params, query: req.query, headers: req.headers, body: req.body };
    const result = await call(input, context(req, res));
    for (const [name, value] of Object.entries(result.headers)) {
      if (value !== undefined) res.setHeader(name, String(value));
    }
    res.status(result.status).json(result.body);
  };
}

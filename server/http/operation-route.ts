import type { Request, RequestHandler, Response } from 'express';
import { ApiError } from './errors.ts';

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

type AnyHandler<Ctx> = (req: never, ctx: Ctx) => Promise<HandlerResult>;

/**
 * The last middleware of an operation: hands the validated request to the typed handler and writes
 * its result. A request the validator did not match to this operation never reaches the handler.
 */
export function handlerRoute<Ctx>(handler: AnyHandler<Ctx>, context: (req: Request, res: Response) => Ctx): RequestHandler {
  const call = handler as unknown as (req: HandlerInput, ctx: Ctx) => Promise<HandlerResult>;
  return async (req, res) => {
    if (!(req as Request & { openapi?: unknown }).openapi) throw new ApiError('NOT_FOUND', 'No such resource.');
    const input: HandlerInput = { params: req.params, query: req.query, headers: req.headers, body: req.body };
    const result = await call(input, context(req, res));
    for (const [name, value] of Object.entries(result.headers)) {
      if (value !== undefined) res.setHeader(name, String(value));
    }
    res.status(result.status).json(result.body);
  };
}

import type { ToolsOperations } from '../../generated/tools-handlers.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { checkSite as probe } from './net/check-site.ts';

type Op = ToolsOperations['checkSite'];

/** POST /api/tools/check-site: up or down, judged on the address actually connected to (net/check-site.ts). */
export async function checkSite(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const result = await probe(req.body.url, ctx.services.siteCheck);
  return { status: 200, headers: {}, body: successBody(result, ctx.requestId) };
}

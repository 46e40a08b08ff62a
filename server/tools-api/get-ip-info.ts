import type { ToolsOperations } from '../../generated/tools-handlers.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { buildIpInfo } from './net/ip-info.ts';

type Op = ToolsOperations['getIpInfo'];

/** GET /api/tools/ip-info: the caller's address, its scope, a forward-confirmed name, the User-Agent. */
export async function getIpInfo(_req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const info = await buildIpInfo(ctx.clientIp, ctx.userAgent ?? undefined, ctx.services.ipInfo);
  return { status: 200, headers: {}, body: successBody(info, ctx.requestId) };
}

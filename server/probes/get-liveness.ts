import type { ToolsOperations } from '../../generated/tools-handlers.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';

type Op = ToolsOperations['getLiveness'];

/** GET /livez: the process serves. No dependency is checked, so an outage never gets a healthy process restarted. */
export async function getLiveness(_req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  return { status: 200, headers: {}, body: successBody({ status: 'live' as const }, ctx.requestId) };
}

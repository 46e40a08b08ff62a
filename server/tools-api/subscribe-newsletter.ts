import type { ToolsOperations } from '../../generated/tools-handlers.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';

type Op = ToolsOperations['subscribeNewsletter'];

/** POST /api/newsletter/subscribe: 201 for a new address, 200 with the existing record for a repeat. */
export async function subscribeNewsletter(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { subscriber, created } = await ctx.services.store.newsletter.subscribe(req.body.email, req.body.source);
  const body = successBody(
    { email: subscriber.email, source: subscriber.source, status: subscriber.status, subscribed_at: subscriber.subscribedAt },
    ctx.requestId,
  );
  return created ? { status: 201, headers: {}, body } : { status: 200, headers: {}, body };
}

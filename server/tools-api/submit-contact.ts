import type { ToolsOperations } from '../../generated/tools-handlers.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { normalizeEmail } from '../store/index.ts';

type Op = ToolsOperations['submitContact'];

/** POST /api/contacts/{type}: the message is committed (synchronous=FULL) before the 201 is sent. */
export async function submitContact(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { name, email, subject, message } = req.body;
  const stored = await ctx.services.store.contacts.insert({
    type: req.params.type,
    name,
    email: normalizeEmail(email),
    subject,
    message,
    clientIp: ctx.clientIp,
  });
  return { status: 201, headers: {}, body: successBody({ id: stored.id, type: stored.type, received_at: stored.receivedAt }, ctx.requestId) };
}

import type { ToolsOperations } from '../../generated/tools-handlers.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { ApiError } from '../http/errors.ts';

type Op = ToolsOperations['getReadiness'];

/** How long a load balancer should wait before asking again. */
const RETRY_AFTER = { 'Retry-After': '5' };

/**
 * GET /readyz: 200 when every shared check passes but the advisory ones (server/health.ts); 503
 * naming the failing checks, or from the start of shutdown until the process exits.
 */
export async function getReadiness(_req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const { health } = ctx.services;
  const shuttingDown = (): ApiError =>
    new ApiError('SERVICE_UNAVAILABLE', 'Not ready: the server is shutting down.', { shutting_down: true }, RETRY_AFTER);
  if (health.draining) throw shuttingDown();
  const { results: checks, failing: failed } = await health.run();
  if (health.draining) throw shuttingDown();
  if (failed.length > 0) {
    const what = `the ${failed.join(', ')} check${failed.length > 1 ? 's' : ''}`;
    throw new ApiError('SERVICE_UNAVAILABLE', `Not ready: ${what} failed.`, { failing: failed, checks }, RETRY_AFTER);
  }
  return { status: 200, headers: {}, body: successBody({ status: 'ready' as const, checks }, ctx.requestId) };
}

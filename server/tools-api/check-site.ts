import type { ToolsOperations } from '../../generated/tools-handlers.ts';
import type { components } from '../../generated/tools-types.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { checkSite as probe } from './net/check-site.ts';

type Op = ToolsOperations['checkSite'];
type Reason = components['schemas']['SiteCheck']['reason'];

/** The prober's reasons in the contract's vocabulary (closed enum; its extra cases fold into the nearest). */
const REASONS: Record<string, Reason> = {
  http_error: 'HTTP_ERROR',
  dns_failure: 'DNS_FAILURE',
  connection_refused: 'CONNECTION_REFUSED',
  connection_failed: 'CONNECTION_RESET',
  connection_reset: 'CONNECTION_RESET',
  tls_error: 'TLS_ERROR',
  timeout: 'TIMEOUT',
  too_many_redirects: 'TOO_MANY_REDIRECTS',
  invalid_redirect: 'HTTP_ERROR',
  invalid_response: 'CONNECTION_RESET',
};

const TIMEOUT_MS = 10_000;

/** POST /api/tools/check-site: up or down, judged on the address actually connected to. */
export async function checkSite(req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const result = await probe(req.body.url, { ...ctx.services.siteCheck, timeoutMs: TIMEOUT_MS });
  const reason = result.reason === null ? null : (REASONS[result.reason.toLowerCase()] ?? 'CONNECTION_RESET');
  return {
    status: 200,
    headers: {},
    body: successBody(
      {
        url: req.body.url,
        status: result.status,
        http_status: result.http_status,
        response_time_ms: Math.min(result.response_time_ms, TIMEOUT_MS),
        checked_at: result.checked_at,
        reason,
      },
      ctx.requestId,
    ),
  };
}

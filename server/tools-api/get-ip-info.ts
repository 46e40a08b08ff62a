import type { ToolsOperations } from '../../generated/tools-handlers.ts';
import type { components } from '../../generated/tools-types.ts';
import type { RequestContext } from '../context.ts';
import { successBody } from '../http/envelope.ts';
import { classifyAddress, parseAddress } from './net/address.ts';

type Op = ToolsOperations['getIpInfo'];
type Scope = components['schemas']['IpInfo']['scope'];

const CONTRACT_SCOPES: ReadonlySet<string> = new Set(['public', 'private', 'loopback', 'link_local', 'cgnat']);

/** The classifier's finer scopes (multicast, documentation, …) are `reserved` in the contract. */
function contractScope(address: string): Scope {
  const scope = classifyAddress(address);
  return scope !== null && CONTRACT_SCOPES.has(scope) ? (scope as Scope) : 'reserved';
}

/** GET /api/tools/ip-info: what the server sees of the caller (no reverse lookup: hostname stays null). */
export async function getIpInfo(_req: Op['request'], ctx: RequestContext): Promise<Op['response']> {
  const ip = ctx.clientIp;
  const version = parseAddress(ip)?.version ?? (ip.includes(':') ? 6 : 4);
  return {
    status: 200,
    headers: {},
    body: successBody(
      { ip, version, scope: contractScope(ip), hostname: null, user_agent: ctx.userAgent === null ? null : ctx.userAgent.slice(0, 512) },
      ctx.requestId,
    ),
  };
}

/**
 * The public tools API's mix of requests, as a client's turns go round it: the warm-up's
 * (./client.ts) and `npm run bench:tools-api`'s. Four in ten are ip-info, three check an up site,
 * one a down site, one subscribes to the newsletter and one sends a contact message.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export const TOOLS_MIX = ['ip-info', 'check-site', 'ip-info', 'subscribe', 'check-site', 'ip-info', 'check-site', 'contact', 'ip-info', 'check-site-down'] as const;

export type ToolsRequestKind = (typeof TOOLS_MIX)[number];

/** One request of the mix: a JSON body for POST, none for GET. */
export interface ToolsRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
}

/** The path of the checked site that answers 404: check-site reports it `down`. */
const DOWN_PATH = '/missing';

/** The site that check-site checks in the mix, on a loopback port: up on `/`, down on DOWN_PATH. */
export function checkedSite(req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(req.url === DOWN_PATH ? 404 : 200, { 'content-type': 'text/plain' }).end('ok\n');
}

/**
 * The request of `kind`: checks go to the checked site on `sitePort`; subscriptions and contact
 * messages come from `sender` (`email` unique to the request, `name` also the newsletter's source).
 */
export function toolsRequest(kind: ToolsRequestKind, sitePort: number, sender: { name: string; email: string }): ToolsRequest {
  const { name, email } = sender;
  switch (kind) {
    case 'ip-info':
      return { method: 'GET', path: '/api/tools/ip-info' };
    case 'check-site':
      return { method: 'POST', path: '/api/tools/check-site', body: { url: `http://127.0.0.1:${sitePort}/` } };
    case 'check-site-down':
      return { method: 'POST', path: '/api/tools/check-site', body: { url: `http://127.0.0.1:${sitePort}${DOWN_PATH}` } };
    case 'subscribe':
      return { method: 'POST', path: '/api/newsletter/subscribe', body: { email, source: name.toLowerCase() } };
    case 'contact':
      return { method: 'POST', path: '/api/contacts/support', body: { name, email, subject: 'Load', message: `A message of the tools API's mix, sent by the ${name.toLowerCase()}.` } };
  }
}

/**
 * The public tools API's mix of requests, as a client's turns go round it: the warm-up's
 * (./client.ts) and `npm run bench:tools-api`'s. Four in ten are ip-info, three check an up site,
 * one a down site, one subscribes to the newsletter and one sends a contact message.
 */
export const TOOLS_MIX = ['ip-info', 'check-site', 'ip-info', 'subscribe', 'check-site', 'ip-info', 'check-site', 'contact', 'ip-info', 'check-site-down'] as const;

export type ToolsRequestKind = (typeof TOOLS_MIX)[number];

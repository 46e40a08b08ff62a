import type { ToolsHandlers } from '../../generated/tools-handlers.ts';
import type { RequestContext } from '../context.ts';
import { probeHandlers } from '../probes/index.ts';
import { checkSite } from './check-site.ts';
import { getIpInfo } from './get-ip-info.ts';
import { submitContact } from './submit-contact.ts';
import { subscribeNewsletter } from './subscribe-newsletter.ts';

/** The public tools API and the health probes at the site origin: one handler per operation of the generated table. */
export const toolsHandlers: ToolsHandlers<RequestContext> = {
  checkSite,
  getIpInfo,
  subscribeNewsletter,
  submitContact,
  ...probeHandlers,
};

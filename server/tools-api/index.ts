import type { ToolsHandlers } from '../../generated/tools-handlers.ts';
import type { RequestContext } from '../context.ts';
import { checkSite } from './check-site.ts';
import { getIpInfo } from './get-ip-info.ts';
import { submitContact } from './submit-contact.ts';
import { subscribeNewsletter } from './subscribe-newsletter.ts';

/** The public tools API: one handler per operation of the generated table. */
export const toolsHandlers: ToolsHandlers<RequestContext> = {
  checkSite,
  getIpInfo,
  subscribeNewsletter,
  submitContact,
};

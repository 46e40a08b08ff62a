import type { ToolsOperationId } from '../../generated/tools-handlers.ts';
import { getLiveness } from './get-liveness.ts';
import { getReadiness } from './get-readiness.ts';

/** The health probes for orchestrators, at the site origin (documented in the tools document, tag Probes). */
export const probeHandlers = { getLiveness, getReadiness };

export const PROBE_OPERATIONS = Object.keys(probeHandlers) as Array<keyof typeof probeHandlers & ToolsOperationId>;

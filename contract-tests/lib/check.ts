/** What every check receives and returns. */
import type { Coverage } from './coverage.ts';
import type { ApiDoc, ResponseValidator } from './spec.ts';

export interface CheckResult {
  name: string;
  ok: boolean;
  /** One line: what ran and what it found. */
  summary: string;
  /** Each failure, one line each (shown under the check). */
  failures: string[];
  /** Notes worth showing even on success (skips and their reasons). */
  notes?: string[];
}

export interface Context {
  apis: ApiDoc[];
  validator: ResponseValidator;
  coverage: Coverage;
  /** Origin of the loopback website check-site probes. */
  siteOrigin: string;
}

export function byName(apis: ApiDoc[], operationId: string) {
  for (const api of apis) for (const op of api.operations) if (op.operationId === operationId) return op;
  return undefined;
}

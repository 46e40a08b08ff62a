/**
 * The limits the contract fixes, read from the spec's x-rate-limit (generated/rate-limits.ts):
 * per account per window by plan for the Backup API, per client address per operation for the
 * public tools and POST /auth/token.
 */
import { accountRateLimit, rateLimits, type Plan } from '../../generated/rate-limits.ts';

export type { Plan };

/** Backup API requests per account per window, by plan (all authenticated operations together). */
export const PLAN_LIMITS: Readonly<Record<Plan, number>> = accountRateLimit.limits;
export const ACCOUNT_WINDOW_MS = accountRateLimit.windowSeconds * 1000;

type ToolsOperationId = keyof typeof rateLimits.tools;

/**
 * Public tools requests per client address (per /56 for IPv6) per window, by operationId; none
 * for the operations exempt from limits (the health probes).
 */
export const TOOL_LIMITS = Object.fromEntries(
  Object.entries(rateLimits.tools).flatMap(([id, fact]) => (fact ? [[id, { limit: fact.limit, windowMs: fact.windowSeconds * 1000 }]] : [])),
) as Partial<Record<ToolsOperationId, { limit: number; windowMs: number }>>;

const token = rateLimits.backup.createToken;

/** POST /auth/token requests per client address per window (all attempts). */
export const TOKEN_REQUESTS = { limit: token.limit, windowMs: token.windowSeconds * 1000 } as const;

/**
 * Failed authentications (401 on POST /auth/token, and requests without a valid token on the
 * other operations) per client address per window. Once used up, POST /auth/token answers 429 to
 * that address, good credentials included, until the window ends.
 */
export const AUTH_FAILURES = { limit: token.failedLimit, windowMs: token.windowSeconds * 1000 } as const;

export function planLimit(plan: string): number {
  return plan in PLAN_LIMITS ? PLAN_LIMITS[plan as Plan] : PLAN_LIMITS.free_trial;
}

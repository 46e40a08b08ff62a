/** The limits the contract fixes: per account per hour by plan, per client address per minute for the tools. */

export const HOUR_MS = 3_600_000;
export const MINUTE_MS = 60_000;

export type Plan = 'free_trial' | 'pro' | 'business';

/** Backup API requests per account per hour. */
export const PLAN_LIMITS: Readonly<Record<Plan, number>> = {
  free_trial: 100,
  pro: 1000,
  business: 10000,
};

/** Public tools requests per client address (per /56 for IPv6) per minute. */
export const TOOL_LIMITS = {
  checkSite: 60,
  ipInfo: 30,
  newsletter: 10,
  contacts: 5,
} as const;

/** POST /auth/token requests per client address per hour (all attempts). */
export const TOKEN_REQUESTS = { limit: 60, windowMs: HOUR_MS } as const;

/**
 * Failed authentications (401 on POST /auth/token, and requests without a valid token on the
 * other operations) per client address per hour. Once used up, POST /auth/token answers 429 to
 * that address, good credentials included, until the window ends.
 */
export const AUTH_FAILURES = { limit: 30, windowMs: HOUR_MS } as const;

export function planLimit(plan: string): number {
  return plan in PLAN_LIMITS ? PLAN_LIMITS[plan as Plan] : PLAN_LIMITS.free_trial;
}

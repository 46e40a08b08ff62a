import { ApiError } from '../http/errors.ts';

/** How long a client is asked to wait before retrying a refused submission: queued jobs need time to run. */
const RETRY_AFTER_SECONDS = 30;

/** 429 QUEUE_FULL: the account already has as many jobs queued as the operator allows. */
export function queueFull(limit: number): ApiError {
  return new ApiError(
    'QUEUE_FULL',
    `Your account already has ${limit} jobs queued, the most it may; retry once some have run.`,
    { queue_limit: limit },
    { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  );
}

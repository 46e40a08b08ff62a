import type { QueueCandidate } from '../store/index.ts';

/**
 * The order in which queued jobs are offered a free slot: round-robin across accounts. Accounts
 * at their cap of running jobs wait; among the others, the one with the fewest jobs running goes
 * first, then the one whose last job started longest ago (never-started first), then the oldest
 * job. So an account that queues hundreds of jobs delays another account's job by at most one
 * job slot. Within one repository jobs run in the order they were queued (the store offers only
 * each repository's oldest queued job).
 */
export function fairOrder(candidates: readonly QueueCandidate[], accountCap: number): QueueCandidate[] {
  return candidates
    .filter((c) => c.accountRunning < accountCap)
    .sort(
      (a, b) =>
        a.accountRunning - b.accountRunning ||
        compareNullsFirst(a.accountLastStartedAt, b.accountLastStartedAt) ||
        compareNullsFirst(a.queuedAt, b.queuedAt) ||
        compareNullsFirst(a.id.slice(4), b.id.slice(4)), // the ULID after the kind's prefix: order of submission
    );
}

function compareNullsFirst(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : 1;
}

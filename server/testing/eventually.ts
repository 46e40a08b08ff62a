import { setTimeout as sleep } from 'node:timers/promises';
import type { Harness } from './harness.ts';

/**
 * Asks `path` until it answers `status` or `timeoutMs` passes; the last status seen. For answers
 * that follow a dependency coming back (a probe after Redis restarts) or a loaded machine (a
 * check that missed its time limit once), as an orchestrator polls.
 */
export async function statusWithin(h: Harness, path: string, status: number, timeoutMs = 10_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = (await h.request(path)).status;
    if (seen === status || Date.now() > deadline) return seen;
    await sleep(100);
  }
}

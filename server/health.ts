/**
 * The named checks that GET /api/v1/status and GET /readyz share (database, storage, and where
 * configured redis, object store, certificate). Each check is a small function kept in
 * the module of its subsystem; this module only runs them, in parallel, each with a time limit,
 * and holds the draining flag that turns readiness off from SIGTERM until the process exits.
 */

import type { components } from '../generated/backup-types.ts';

/**
 * A check passes when `run` resolves to anything but `false` (or to `{ ok: true }`); throwing or
 * timing out fails it. `{ ok, details }` adds the details (e.g. a certificate's `expires_at`) to the result.
 * An advisory check makes /status `degraded` but never /readyz `503`: the instance still serves.
 * A check may also say that one failure of its own is advisory (`{ ok: false, advisory: true }`:
 * storage that is writable but low on space).
 */
export interface HealthCheck {
  name: string;
  run: () => unknown;
  advisory?: boolean;
}

export interface CheckResult {
  status: 'ok' | 'failed';
  /** Milliseconds until the answer (or the failure; at most CHECK_TIMEOUT_MS). */
  latency_ms: number;
  [detail: string]: unknown;
}

/** Results by check name, as the contract's HealthChecks schema has them (`database` and `storage` always). */
export type HealthResults = components['schemas']['HealthChecks'];

/** A check gives up after this long and counts as failed. */
export const CHECK_TIMEOUT_MS = 1000;

type Verdict = { ok: boolean; advisory?: boolean; details: Record<string, unknown> };

function verdict(answer: unknown): Verdict {
  if (answer !== null && typeof answer === 'object' && 'ok' in answer) {
    const { ok, advisory, details } = answer as { ok: unknown; advisory?: unknown; details?: Record<string, unknown> };
    return { ok: ok === true, advisory: advisory === true, details: details ?? {} };
  }
  return { ok: answer !== false, details: {} };
}

/**
 * Runs one check with its time limit. The check is called at once and its clock starts then: a
 * check that blocks the thread (a synchronous call waiting on a lock) does not eat into the time
 * of the checks started after it; it fails itself when it took longer than the limit.
 */
async function timed(check: HealthCheck): Promise<{ result: CheckResult; advisory: boolean }> {
  const started = performance.now();
  let answer: Promise<Verdict>;
  try {
    answer = Promise.resolve(check.run()).then(verdict, () => ({ ok: false, details: {} }));
  } catch {
    answer = Promise.resolve({ ok: false, details: {} });
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Verdict>((resolve) => (timer = setTimeout(() => resolve({ ok: false, details: {} }), CHECK_TIMEOUT_MS)));
  const { ok, advisory, details } = await Promise.race([answer, timeout]);
  clearTimeout(timer);
  const latency = Math.round(performance.now() - started);
  const result: CheckResult = { status: ok && latency <= CHECK_TIMEOUT_MS ? 'ok' : 'failed', latency_ms: latency, ...details };
  return { result, advisory: check.advisory === true || (advisory === true && latency <= CHECK_TIMEOUT_MS) };
}

export class Health {
  private readonly checks: HealthCheck[];
  /** Set at the start of shutdown: /readyz answers 503 from then until the process exits. */
  draining = false;

  /** The checks every deployment has; further ones are added by the subsystems configured. */
  constructor(core: { database: HealthCheck['run']; storage: HealthCheck['run'] }) {
    this.checks = [
      { name: 'database', run: core.database },
      { name: 'storage', run: core.storage },
    ];
  }

  /** Adds a check (a subsystem configured at start: redis, object store, certificate). */
  add(check: HealthCheck): void {
    if (this.checks.some((c) => c.name === check.name)) throw new Error(`health check ${check.name} added twice`);
    this.checks.push(check);
  }

  /** Runs every check at once (each started in turn): the results by name, and the failed ones that are not advisory. */
  async run(): Promise<{ results: HealthResults; failing: string[]; degraded: boolean }> {
    const outcomes = await Promise.all(this.checks.map(timed));
    // Each check's details (a certificate's expires_at) are the ones its schema names.
    const results = Object.fromEntries(this.checks.map((c, i) => [c.name, outcomes[i]!.result])) as unknown as HealthResults;
    const failed = outcomes.flatMap((o, i) => (o.result.status === 'ok' ? [] : [{ name: this.checks[i]!.name, advisory: o.advisory }]));
    return { results, failing: failed.filter((f) => !f.advisory).map((f) => f.name), degraded: failed.length > 0 };
  }
}

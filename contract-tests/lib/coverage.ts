/**
 * Which documented (operation, response) pairs each check reached, and the table the report
 * shows: per check the operations and responses covered, then the responses no check reached.
 */
import type { ApiDoc } from './spec.ts';

export class Coverage {
  private readonly hits = new Map<string, Set<string>>();

  /** Records that a check saw a documented response (statusKey as in the document, e.g. "404"). */
  add(check: string, operationId: string, statusKey: string): void {
    let set = this.hits.get(check);
    if (!set) {
      set = new Set();
      this.hits.set(check, set);
    }
    set.add(`${operationId} ${statusKey}`);
  }

  checks(): string[] {
    return [...this.hits.keys()];
  }

  has(check: string, operationId: string, statusKey: string): boolean {
    return this.hits.get(check)?.has(`${operationId} ${statusKey}`) ?? false;
  }

  toJSON(): Record<string, string[]> {
    return Object.fromEntries([...this.hits].map(([k, v]) => [k, [...v].sort()]));
  }

  /**
   * The report table. `mockChecks` run against the mock, not the server: they get their own
   * row, and the "not reached" list is about the real server only.
   */
  table(apis: ApiDoc[], unreachableWhy: (operationId: string, status: string) => string, mockChecks: string[] = []): string {
    const all: Array<{ op: string; status: string }> = [];
    for (const api of apis) for (const op of api.operations) for (const s of op.statuses) all.push({ op: op.operationId, status: s });
    const totalOps = new Set(all.map((a) => a.op)).size;
    const row = (label: string, set: Set<string>) => {
      const ops = new Set([...set].map((k) => k.split(' ')[0]));
      const responses = all.filter((a) => set.has(`${a.op} ${a.status}`)).length;
      return `| ${label} | ${ops.size}/${totalOps} | ${responses}/${all.length} |`;
    };
    const lines = [`| check | operations | documented responses |`, `|---|---|---|`];
    for (const [check, set] of this.hits) lines.push(row(check, set));
    const real = new Set([...this.hits].filter(([check]) => !mockChecks.includes(check)).flatMap(([, s]) => [...s]));
    lines.push(row('any check on the real server', real));
    const missed = all.filter((a) => !real.has(`${a.op} ${a.status}`));
    lines.push('', missed.length === 0 ? 'Every documented response is reached on the real server.' : `Documented responses no check reaches on the real server (${missed.length}):`);
    for (const m of missed) lines.push(`- ${m.op} ${m.status}: ${unreachableWhy(m.op, m.status)}`);
    return lines.join('\n');
  }
}

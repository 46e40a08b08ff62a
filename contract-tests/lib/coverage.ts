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

  table(apis: ApiDoc[], unreachableWhy: (operationId: string, status: string) => string): string {
    const all: Array<{ op: string; status: string }> = [];
    for (const api of apis) for (const op of api.operations) for (const s of op.statuses) all.push({ op: op.operationId, status: s });
    const totalOps = new Set(all.map((a) => a.op)).size;
    const lines = [
      `| check | operations | documented responses |`,
      `|---|---|---|`,
    ];
    for (const [check, set] of this.hits) {
      const ops = new Set([...set].map((k) => k.split(' ')[0]));
      const responses = all.filter((a) => set.has(`${a.op} ${a.status}`)).length;
      lines.push(`| ${check} | ${ops.size}/${totalOps} | ${responses}/${all.length} |`);
    }
    const union = new Set([...this.hits.values()].flatMap((s) => [...s]));
    const unionOps = new Set([...union].map((k) => k.split(' ')[0]));
    lines.push(`| any check | ${unionOps.size}/${totalOps} | ${all.filter((a) => union.has(`${a.op} ${a.status}`)).length}/${all.length} |`);
    const missed = all.filter((a) => !union.has(`${a.op} ${a.status}`));
    lines.push('', missed.length === 0 ? 'Every documented response is reached by at least one check.' : 'Documented responses no check reaches:');
    for (const m of missed) lines.push(`- ${m.op} ${m.status}: ${unreachableWhy(m.op, m.status)}`);
    return lines.join('\n');
  }
}

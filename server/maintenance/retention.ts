/**
 * Retention policies with restic's `forget` semantics: the items (backups of one source and
 * destination) are walked from the newest; each rule keeps an item when the item's period
 * (hour, day, ISO week, month, year, in UTC; for `last`, the item itself) differs from that of
 * the last item the rule kept, until it has kept its count. An item kept by any rule is kept.
 */
export const RULES = ['last', 'hourly', 'daily', 'weekly', 'monthly', 'yearly'] as const;
export type RetentionRule = (typeof RULES)[number];
export type RetentionPolicy = Partial<Record<RetentionRule, number>>;

export interface Decision<T> {
  keep: { item: T; reasons: RetentionRule[] }[];
  forget: T[];
}

/** An ISO week (Monday to Sunday), named by its Thursday (which also decides its ISO year). */
function isoWeek(d: Date): string {
  const t = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
  t.setUTCDate(t.getUTCDate() - ((t.getUTCDay() + 6) % 7) + 3);
  return t.toISOString().slice(0, 10);
}

const PERIOD: Record<RetentionRule, (d: Date, index: number) => string> = {
  last: (_d, i) => String(i),
  hourly: (d) => d.toISOString().slice(0, 13),
  daily: (d) => d.toISOString().slice(0, 10),
  weekly: isoWeek,
  monthly: (d) => d.toISOString().slice(0, 7),
  yearly: (d) => d.toISOString().slice(0, 4),
};

/** Applies `policy` to `items`; both lists come out newest first. */
export function applyRetention<T>(items: readonly T[], time: (item: T) => Date, policy: RetentionPolicy): Decision<T> {
  const sorted = [...items].sort((a, b) => time(b).getTime() - time(a).getTime());
  const state = RULES.filter((r) => (policy[r] ?? 0) > 0).map((rule) => ({ rule, left: policy[rule]!, last: null as string | null }));
  const out: Decision<T> = { keep: [], forget: [] };
  sorted.forEach((item, index) => {
    const reasons: RetentionRule[] = [];
    for (const s of state) {
      if (s.left === 0) continue;
      const period = PERIOD[s.rule](time(item), index);
      if (period === s.last) continue;
      s.last = period;
      s.left--;
      reasons.push(s.rule);
    }
    if (reasons.length > 0) out.keep.push({ item, reasons });
    else out.forget.push(item);
  });
  return out;
}

import { expect, it } from 'vitest';
import { applyRetention } from './retention.ts';

const at = (iso: string): { id: string; time: Date } => ({ id: iso, time: new Date(iso) });
const ids = (xs: { id: string }[]): string[] => xs.map((x) => x.id);

it('keeps the newest of each day for keep_daily, counting only days that have a backup', () => {
  const items = ['2026-11-20T09:00:00Z', '2026-11-20T02:00:00Z', '2026-11-19T09:00:00Z', '2026-11-15T09:00:00Z', '2026-11-14T23:59:59Z', '2026-11-14T01:00:00Z'].map(at);
  const d = applyRetention(items, (x) => x.time, { daily: 3 });
  expect(d.keep.map((k) => [k.item.id, k.reasons])).toEqual([
    ['2026-11-20T09:00:00Z', ['daily']],
    ['2026-11-19T09:00:00Z', ['daily']],
    ['2026-11-15T09:00:00Z', ['daily']],
  ]);
  expect(ids(d.forget)).toEqual(['2026-11-20T02:00:00Z', '2026-11-14T23:59:59Z', '2026-11-14T01:00:00Z']);
});

it('unions the rules: keep_last 2, keep_daily 7 and keep_weekly 4 over 60 daily backups keep 9', () => {
  const items = Array.from({ length: 60 }, (_, i) => at(new Date(Date.UTC(2026, 10, 20 - i, 9)).toISOString()));
  const d = applyRetention(items, (x) => x.time, { last: 2, daily: 7, weekly: 4 });
  expect(d.keep.length).toBe(9); // 7 days (the 2 newest among them) and 2 older Sundays
  expect(d.keep[0]!.reasons).toEqual(['last', 'daily', 'weekly']);
  expect(d.keep[1]!.reasons).toEqual(['last', 'daily']);
  // 2026-11-20 is a Friday: the weekly ones are that day and the Sundays before it.
  expect(d.keep.filter((k) => k.reasons.includes('weekly')).map((k) => k.item.id.slice(0, 10))).toEqual(['2026-11-20', '2026-11-15', '2026-11-08', '2026-11-01']);
  expect(d.keep.length + d.forget.length).toBe(60);
});

it('puts ISO weeks together across the new year, and months and years by the calendar', () => {
  // 2026-01-01 is a Thursday: 2025-12-29 (Monday) is in the same ISO week 2026-W1.
  const items = ['2026-01-02T10:00:00Z', '2025-12-29T10:00:00Z', '2025-12-28T10:00:00Z'].map(at);
  expect(ids(applyRetention(items, (x) => x.time, { weekly: 5 }).keep.map((k) => k.item))).toEqual(['2026-01-02T10:00:00Z', '2025-12-28T10:00:00Z']);
  expect(ids(applyRetention(items, (x) => x.time, { monthly: 5 }).keep.map((k) => k.item))).toEqual(['2026-01-02T10:00:00Z', '2025-12-29T10:00:00Z']);
  expect(ids(applyRetention(items, (x) => x.time, { yearly: 1 }).keep.map((k) => k.item))).toEqual(['2026-01-02T10:00:00Z']);
  expect(ids(applyRetention(items, (x) => x.time, { hourly: 10 }).keep.map((k) => k.item))).toHaveLength(3);
});

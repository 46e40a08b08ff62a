import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { windowEnd, type RateLimitStore } from './store.ts';

/**
 * The suite every RateLimitStore passes (memory and Redis alike). Each implementation's test file
 * calls it with a factory for a store of its kind; stores may share state between tests (one
 * Redis per file), so every test uses keys of its own. Real clock, short windows.
 */
export function rateLimitStoreSuite(kind: string, open: () => Promise<{ store: RateLimitStore; cleanup: () => Promise<void> }>): void {
  const withStore = (fn: (s: RateLimitStore, key: (name?: string) => string) => Promise<void>) => async () => {
    const { store, cleanup } = await open();
    const prefix = randomUUID();
    try {
      await fn(store, (name = 'k') => `${prefix}:${name}`);
    } finally {
      await cleanup();
    }
  };

  /** Waits until at least `marginMs` of the current window of `windowMs` is left. */
  const roomInWindow = async (windowMs: number, marginMs: number) => {
    const left = windowEnd(Date.now(), windowMs) - Date.now();
    if (left < marginMs) await sleep(left + 5);
  };

  describe(`${kind} rate-limit store conformance`, () => {
    it('counts up to the limit, then refuses without counting, in a clock-aligned window', withStore(async (s, key) => {
      const windowMs = 10_000;
      await roomInWindow(windowMs, 2000);
      const states = [];
      for (let i = 0; i < 4; i++) states.push(await s.hit(key(), 3, windowMs));
      expect(states.map((x) => x.allowed)).toEqual([true, true, true, false]);
      expect(states.map((x) => x.remaining)).toEqual([2, 1, 0, 0]);
      const { resetAt, now, limit } = states[3]!;
      expect(limit).toBe(3);
      expect(resetAt % windowMs).toBe(0);
      expect(resetAt).toBe(windowEnd(now, windowMs));
      expect(Math.abs(now - Date.now())).toBeLessThan(2000);
      expect(new Set(states.map((x) => x.resetAt)).size).toBe(1);
    }));

    it('keeps each key on its own', withStore(async (s, key) => {
      await roomInWindow(60_000, 2000);
      expect((await s.hit(key('a'), 1, 60_000)).allowed).toBe(true);
      expect((await s.hit(key('a'), 1, 60_000)).allowed).toBe(false);
      expect((await s.hit(key('b'), 1, 60_000)).allowed).toBe(true);
    }));

    it('lets exactly the limit through out of 150 parallel hits', withStore(async (s, key) => {
      await roomInWindow(60_000, 5000);
      const states = await Promise.all(Array.from({ length: 150 }, () => s.hit(key(), 100, 60_000)));
      const allowed = states.filter((x) => x.allowed);
      expect(allowed).toHaveLength(100);
      expect(new Set(allowed.map((x) => x.remaining))).toEqual(new Set(Array.from({ length: 100 }, (_, i) => i)));
      expect(states.filter((x) => !x.allowed).every((x) => x.remaining === 0)).toBe(true);
    }));

    it('opens a fresh window once the old one has ended', withStore(async (s, key) => {
      const windowMs = 400;
      await roomInWindow(windowMs, 200);
      const first = await s.hit(key(), 1, windowMs);
      expect(first.allowed).toBe(true);
      expect((await s.hit(key(), 1, windowMs)).allowed).toBe(false);
      await sleep(first.resetAt - Date.now() + 20);
      const next = await s.hit(key(), 1, windowMs);
      expect(next.allowed).toBe(true);
      expect(next.resetAt).toBe(first.resetAt + windowMs);
    }));

    it('takes the limit of each hit: a lower one refuses at once', withStore(async (s, key) => {
      await roomInWindow(60_000, 2000);
      for (let i = 0; i < 3; i++) await s.hit(key(), 10, 60_000);
      const lower = await s.hit(key(), 2, 60_000);
      expect(lower).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
      expect((await s.hit(key(), 10, 60_000)).remaining).toBe(6);
    }));

    it('refunds a hit of the same window only, never below zero', withStore(async (s, key) => {
      const windowMs = 600;
      await roomInWindow(windowMs, 400);
      const first = await s.hit(key(), 2, windowMs);
      await s.hit(key(), 2, windowMs);
      await s.refund(key(), first.resetAt - windowMs); // another window: no effect
      expect((await s.hit(key(), 2, windowMs)).allowed).toBe(false);
      await s.refund(key(), first.resetAt);
      expect((await s.hit(key(), 2, windowMs)).allowed).toBe(true);
      expect((await s.hit(key(), 2, windowMs)).allowed).toBe(false);
      await s.refund(key('never-hit'), first.resetAt);
      expect((await s.hit(key('never-hit'), 1, windowMs)).remaining).toBe(0);
      // Once the window is over, a refund of it changes nothing in the next.
      await sleep(first.resetAt - Date.now() + 20);
      const next = await s.hit(key(), 2, windowMs);
      await s.refund(key(), first.resetAt);
      expect((await s.hit(key(), 2, windowMs)).remaining).toBe(next.remaining - 1);
    }));

    it('forgets a key on reset', withStore(async (s, key) => {
      await roomInWindow(60_000, 2000);
      await s.hit(key(), 1, 60_000);
      expect((await s.hit(key(), 1, 60_000)).allowed).toBe(false);
      await s.reset(key());
      expect((await s.hit(key(), 1, 60_000)).allowed).toBe(true);
    }));
  });
}

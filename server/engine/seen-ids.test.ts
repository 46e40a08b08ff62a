import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { SeenIds } from './seen-ids.ts';

it('tells an id marked before from a new one, across the views of one table', () => {
  const table = SeenIds.table();
  const here = new SeenIds(table);
  const there = new SeenIds(table);
  const ids = Array.from({ length: 10_000 }, () => new Uint8Array(randomBytes(32)));
  for (const id of ids) expect(here.mark(id)).toBe(false);
  for (const id of ids) expect(there.mark(id)).toBe(true);
  // A fingerprint of 0 (the empty slot's value) is kept as another.
  const zero = new Uint8Array(32);
  expect(here.mark(zero)).toBe(false);
  expect(there.mark(zero)).toBe(true);
});

it('stops taking ids where the table is crowded: those are never found', () => {
  const seen = new SeenIds(SeenIds.table());
  // Ids with the same first 4 bytes start at the same slot; each probes one further.
  const crowded = Array.from({ length: 40 }, (_, i) => {
    const id = new Uint8Array(randomBytes(32));
    id.set([7, 7, 0, 0], 0);
    id[4] = i + 1;
    return id;
  });
  for (const id of crowded) expect(seen.mark(id)).toBe(false);
  const kept = crowded.map((id) => seen.mark(id));
  expect(kept.slice(0, 32)).toEqual(Array(32).fill(true));
  expect(kept.slice(32)).toEqual(Array(8).fill(false)); // never kept: encoded every time
});

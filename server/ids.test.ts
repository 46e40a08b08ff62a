import { describe, expect, it } from 'vitest';
import { ID_PATTERN, newId, ulid } from './ids.ts';

describe('ids', () => {
  it('makes prefixed ULIDs that match the contract pattern', () => {
    const id = newId('bkp');
    expect(id).toMatch(/^bkp_/);
    expect(id).toMatch(ID_PATTERN);
  });

  it('sorts by creation time', () => {
    const earlier = ulid(1_700_000_000_000);
    const later = ulid(1_700_000_000_001);
    expect(ulid(Date.now()) > later).toBe(true);
    expect(earlier < later).toBe(true);
    // 2023-11-14T22:13:20.000Z encodes to this time part (ULID spec: 48-bit ms, Crockford base32).
    expect(earlier.slice(0, 10)).toBe('01HF7YAT00');
  });

  it('sorts in the order made, within one millisecond too', () => {
    const ids = Array.from({ length: 1000 }, () => ulid(1_700_000_000_000));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(1000);
  });

  it('does not repeat', () => {
    const seen = new Set(Array.from({ length: 10_000 }, () => newId('req')));
    expect(seen.size).toBe(10_000);
  });

  it('draws fresh random bits for every millisecond, across refills of the random pool', () => {
    // One id per millisecond takes 16 new random bytes each: 1000 ids go through the 4 KiB pool about four times.
    const randomParts = Array.from({ length: 1000 }, (_, i) => ulid(1_800_000_000_000 + i).slice(10));
    expect(new Set(randomParts).size).toBe(1000);
    for (const part of randomParts) expect(part).toMatch(/^[0-9A-HJKMNP-TV-Z]{16}$/);
  });
});

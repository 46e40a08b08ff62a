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
    expect(earlier < later).toBe(true);
    // 2023-11-14T22:13:20.000Z encodes to this time part (ULID spec: 48-bit ms, Crockford base32).
    expect(earlier.slice(0, 10)).toBe('01HF7YAT00');
  });

  it('does not repeat', () => {
    const seen = new Set(Array.from({ length: 10_000 }, () => newId('req')));
    expect(seen.size).toBe(10_000);
  });
});

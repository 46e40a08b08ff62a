import { describe, expect, it } from 'vitest';
import { ApiError } from '../http/errors.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { preferWait } from './prefer-wait.ts';

describe('cursors', () => {
  it('round-trip within their listing and match the contract pattern', () => {
    const c = encodeCursor(['files', 'acc_1', 'bkp_1', ''], '2s');
    expect(c).toMatch(/^[A-Za-z0-9_-]{1,512}$/);
    expect(decodeCursor(['files', 'acc_1', 'bkp_1', ''], c, /^[0-9a-z]+$/)).toBe('2s');
  });

  it('refuse a cursor of another listing, an edited one, or garbage', () => {
    const c = encodeCursor(['files', 'acc_1', 'bkp_1', ''], '2s');
    for (const [listing, cursor] of [
      [['files', 'acc_1', 'bkp_1', 'docs/'], c],
      [['files', 'acc_2', 'bkp_1', ''], c],
      [['files', 'acc_1', 'bkp_1', ''], c.slice(0, 11) + 'ZZ'],
      [['files', 'acc_1', 'bkp_1', ''], 'short'],
    ] as const) {
      expect(() => decodeCursor(listing, cursor, /^[0-9a-z]+$/)).toThrow(ApiError);
    }
  });
});

describe('Prefer: wait', () => {
  it('reads wait=N among other preferences, caps it at 30 and ignores anything else', () => {
    expect(preferWait(undefined)).toBeNull();
    expect(preferWait('wait=10')).toBe(10);
    expect(preferWait('respond-async, wait=5')).toBe(5);
    expect(preferWait('example=invalid-source')).toBeNull();
    expect(preferWait('wait=600')).toBe(30);
    expect(preferWait('WAIT = 0')).toBe(0);
    expect(preferWait('wait=-1')).toBeNull();
    expect(preferWait('wait=abc')).toBeNull();
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EscapedPathError, pathToText, textToPath } from './escaped-path.ts';

const b = (...bytes: number[]) => Buffer.from(bytes);

describe('escaped paths', () => {
  it('shows valid UTF-8 as it is', () => {
    expect(pathToText(Buffer.from('reports/naïve café.txt'))).toBe('reports/naïve café.txt');
    expect(pathToText(Buffer.from('日本/😀'))).toBe('日本/😀');
  });

  it('escapes bytes outside well-formed UTF-8, and the backslash itself', () => {
    expect(pathToText(b(0x61, 0xff, 0x62))).toBe('a\\xffb');
    expect(pathToText(Buffer.from('a\\b'))).toBe('a\\x5cb');
    expect(pathToText(b(0xc3))).toBe('\\xc3'); // truncated sequence
    expect(pathToText(b(0xc0, 0xaf))).toBe('\\xc0\\xaf'); // overlong '/'
    expect(pathToText(b(0xed, 0xa0, 0x80))).toBe('\\xed\\xa0\\x80'); // a surrogate
    expect(pathToText(b(0xe2, 0x82, 0xac, 0x80))).toBe('€\\x80');
  });

  it('reads escapes back, upper or lower case, and refuses a stray backslash', () => {
    expect(textToPath('a\\xFFb')).toEqual(b(0x61, 0xff, 0x62));
    expect(textToPath('a\\x5cb')).toEqual(Buffer.from('a\\b'));
    expect(() => textToPath('a\\b')).toThrow(EscapedPathError);
    expect(() => textToPath('a\\x4')).toThrow(EscapedPathError);
  });

  it('round-trips any bytes, and any text it produced', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const text = pathToText(bytes);
        expect(Buffer.from(textToPath(text)).equals(Buffer.from(bytes))).toBe(true);
        expect(pathToText(textToPath(text))).toBe(text);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 32 }), (s) => {
        const clean = s.replaceAll('\\', '');
        expect(pathToText(Buffer.from(clean))).toBe(clean);
      }),
    );
  });
});

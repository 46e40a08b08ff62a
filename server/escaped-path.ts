/**
 * File names are bytes; the API speaks text. A path is shown as its UTF-8 text, except that
 * every byte that is not part of a well-formed UTF-8 sequence, and every backslash, is written
 * `\xHH` (two lower-case hex digits; a backslash itself is `\x5c`). The mapping is one to one:
 * `textToPath(pathToText(b))` gives back `b` for any bytes, so a name that is not valid UTF-8
 * (normal on Linux) can be listed, and asked for in a restore, exactly.
 */
const BACKSLASH = 0x5c;
const fatal = new TextDecoder('utf-8', { fatal: true });
const hex = (b: number): string => `\\x${b.toString(16).padStart(2, '0')}`;

/** Length of the well-formed UTF-8 sequence starting at `i`, or 0 when the byte there starts none. */
function sequenceLength(b: Uint8Array, i: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf): boolean => i + k < b.length && b[i + k]! >= lo && b[i + k]! <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c === 0xee || c === 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0; // no surrogates
  if (c === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

export function pathToText(bytes: Uint8Array): string {
  if (!bytes.includes(BACKSLASH)) {
    try {
      return fatal.decode(bytes);
    } catch {
      // not valid UTF-8: escape byte by byte below
    }
  }
  let out = '';
  let run = 0; // start of the pending run of well-formed text
  let i = 0;
  const flush = (end: number): void => {
    if (end > run) out += fatal.decode(bytes.subarray(run, end));
  };
  while (i < bytes.length) {
    const n = bytes[i] === BACKSLASH ? 0 : sequenceLength(bytes, i);
    if (n > 0) {
      i += n;
      continue;
    }
    flush(i);
    out += hex(bytes[i]!);
    i++;
    run = i;
  }
  flush(i);
  return out;
}

export class EscapedPathError extends Error {}

/** The bytes a path written by `pathToText` stands for; throws EscapedPathError on a backslash that does not start `\xHH`. */
export function textToPath(text: string): Uint8Array {
  if (!text.includes('\\')) return Buffer.from(text, 'utf8');
  const parts: Uint8Array[] = [];
  let last = 0;
  for (let i = text.indexOf('\\'); i >= 0; i = text.indexOf('\\', last)) {
    const m = /^\\x([0-9a-fA-F]{2})/.exec(text.slice(i, i + 4));
    if (!m) throw new EscapedPathError(`a backslash must start an escape \\xHH (at character ${i})`);
    parts.push(Buffer.from(text.slice(last, i), 'utf8'), Uint8Array.of(Number.parseInt(m[1]!, 16)));
    last = i + 4;
  }
  parts.push(Buffer.from(text.slice(last), 'utf8'));
  return Buffer.concat(parts);
}

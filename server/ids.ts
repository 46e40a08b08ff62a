import { randomPool } from './random-pool.ts';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export type IdPrefix = 'bkp' | 'rst' | 'req' | 'msg' | 'key' | 'acc' | 'mnt';

/** 16 random bytes per id, drawn 256 ids at a time (every request gets an id). */
const random16 = randomPool(16, 256);

let lastTime = -1;
/** The random part of the last id, as 16 base-32 digits (incremented in place). */
const lastRandom = new Uint8Array(16);
/** The encoded time part of the last id, reused while the millisecond stays the same. */
let encodedTime = -1;
let timePart = '';

/** Makes lastRandom the next 16-digit base-32 number; false when it was the last one (all 'Z'). */
function increment(): boolean {
  for (let i = lastRandom.length - 1; i >= 0; i--) {
    if (lastRandom[i]! < 31) {
      lastRandom[i]!++;
      return true;
    }
    lastRandom[i] = 0;
  }
  return false;
}

/**
 * A ULID: 48-bit millisecond time then 80 random bits, 26 Crockford base32 characters. Monotonic
 * in this process (the ULID spec's rule): within one millisecond, each id is the previous one
 * plus one, so ids made one after another sort in that order.
 */
export function ulid(now = Date.now()): string {
  let time = now;
  let fresh = true;
  if (now === lastTime) {
    fresh = !increment();
    if (fresh) time = now + 1; // 2^80 ids in one millisecond: move on to the next
  }
  if (fresh) {
    const bytes = random16();
    for (let i = 0; i < 16; i++) lastRandom[i] = bytes[i]! % 32;
  }
  lastTime = time;
  if (time !== encodedTime) {
    let encoded = '';
    let t = time;
    for (let i = 0; i < 10; i++) {
      encoded = CROCKFORD[t % 32] + encoded;
      t = Math.floor(t / 32);
    }
    timePart = encoded;
    encodedTime = time;
  }
  let random = '';
  for (let i = 0; i < 16; i++) random += CROCKFORD[lastRandom[i]!];
  return timePart + random;
}

/** An opaque, sortable id with a type prefix, e.g. `bkp_01J…`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}

export const ID_PATTERN = /^[a-z]{3}_[0-9A-HJKMNP-TV-Z]{26}$/;

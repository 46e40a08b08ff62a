import { randomPool } from './random-pool.ts';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export type IdPrefix = 'bkp' | 'rst' | 'req' | 'msg' | 'key' | 'acc' | 'mnt';

/** 16 random bytes per id, drawn 256 ids at a time (every request gets an id). */
const random16 = randomPool(16, 256);

let lastTime = -1;
let lastRandom: number[] = [];

/** The base-32 digits after `digits`, or null when it is the last one (all 'Z'). */
function increment(digits: readonly number[]): number[] | null {
  const out = [...digits];
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i]! < 31) {
      out[i]!++;
      return out;
    }
    out[i] = 0;
  }
  return null;
}

/**
 * A ULID: 48-bit millisecond time then 80 random bits, 26 Crockford base32 characters. Monotonic
 * in this process (the ULID spec's rule): within one millisecond, each id is the previous one
 * plus one, so ids made one after another sort in that order.
 */
export function ulid(now = Date.now()): string {
  let time = now;
  let random: number[] | null = null;
  if (now === lastTime) {
    random = increment(lastRandom);
    if (!random) time = now + 1; // 2^80 ids in one millisecond: move on to the next
  }
  if (!random) {
    random = Array.from(random16(), (b) => b % 32);
  }
  lastTime = time;
  lastRandom = random;
  let encoded = '';
  let t = time;
  for (let i = 0; i < 10; i++) {
    encoded = CROCKFORD[t % 32] + encoded;
    t = Math.floor(t / 32);
  }
  return encoded + random.map((d) => CROCKFORD[d]).join('');
}

/** An opaque, sortable id with a type prefix, e.g. `bkp_01J…`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}

export const ID_PATTERN = /^[a-z]{3}_[0-9A-HJKMNP-TV-Z]{26}$/;

import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

// scrypt N=2^14, r=8, p=1 (the OWASP-listed minimum is 2^17 with r=8 for passwords; our generated
// secrets carry 256 bits, so the cost only has to protect operator-chosen bootstrap secrets).
const N = 16384;
const R = 8;
const P = 1;
const KEY_LEN = 32;

function derive(secret: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, KEY_LEN, { N: n, r, p, maxmem: 128 * n * r * 2 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** `scrypt$N$r$p$salt$hash`, salt and hash base64url. */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(secret, salt, N, R, P);
  return ['scrypt', N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Constant-time check of a secret against a stored hash. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  const actual = await derive(secret, salt, n, r, p);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A stored hash no secret matches; verifying against it keeps an unknown key as slow as a known one. */
export const DUMMY_HASH = `scrypt$${N}$${R}$${P}$${Buffer.alloc(16).toString('base64url')}$${Buffer.alloc(KEY_LEN, 1).toString('base64url')}`;

/** A new API secret: 32 random bytes. */
export function generateSecret(): string {
  return 'sk_' + randomBytes(32).toString('base64url');
}

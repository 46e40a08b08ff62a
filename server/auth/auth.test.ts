import { randomBytes } from 'node:crypto';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../http/errors.ts';
import { tempStore } from '../testing/temp-store.ts';
import { authenticateKey, createApiKey, ensureStartupKey } from './api-keys.ts';
import { hashSecret, verifySecret } from './secret-hash.ts';
import { TOKEN_AUDIENCE, TOKEN_ISSUER, TokenService } from './tokens.ts';

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return err instanceof ApiError ? err.code : `other:${String(err)}`;
  }
}

describe('secret hashing', () => {
  it('verifies the right secret only and salts every hash', async () => {
    const h1 = await hashSecret('correct horse');
    const h2 = await hashSecret('correct horse');
    expect(h1).not.toBe(h2);
    expect(h1).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(await verifySecret('correct horse', h1)).toBe(true);
    expect(await verifySecret('correct horsf', h1)).toBe(false);
    expect(await verifySecret('x', 'garbage')).toBe(false);
  });
});

describe('API keys', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });
  async function fresh() {
    const t = await tempStore();
    cleanups.push(t.cleanup);
    return t.store;
  }

  it('creates a key with its own account, stores only a hash, and authenticates it', async () => {
    const store = await fresh();
    const k = await createApiKey(store, { plan: 'pro' });
    expect(k.apiKey).toMatch(/^key_/);
    expect(k.accountId).toMatch(/^acc_/);
    const stored = (await store.accounts.getKey(k.apiKey))!;
    expect(stored.secretHash).toMatch(/^scrypt\$/);
    expect(stored.secretHash).not.toContain(k.secret);
    expect((await authenticateKey(store, k.apiKey, k.secret))?.plan).toBe('pro');
    expect(await authenticateKey(store, k.apiKey, k.secret + 'x')).toBeNull();
    expect(await authenticateKey(store, 'key_unknown', k.secret)).toBeNull();
    await store.accounts.revokeKey(k.apiKey);
    expect(await authenticateKey(store, k.apiKey, k.secret)).toBeNull();
  });

  it('adds a second key to an existing account', async () => {
    const store = await fresh();
    const a = await createApiKey(store, { plan: 'business' });
    const b = await createApiKey(store, { plan: 'free_trial', accountId: a.accountId });
    expect(b.accountId).toBe(a.accountId);
    expect(b.plan).toBe('business');
  });

  it('creates a development key only on an empty store', async () => {
    const store = await fresh();
    const first = await ensureStartupKey(store, null);
    expect(first.kind).toBe('development');
    const second = await ensureStartupKey(store, null);
    expect(second.kind).toBe('none');
    expect(await store.accounts.countKeys()).toBe(1);
  });

  it('makes the bootstrap key exist with the configured secret and plan', async () => {
    const store = await fresh();
    const boot = { apiKey: 'key_bootstrap', secret: 'first-secret-long-enough', plan: 'pro' as const };
    expect(await ensureStartupKey(store, boot)).toMatchObject({ kind: 'bootstrap', created: true });
    expect(await authenticateKey(store, 'key_bootstrap', boot.secret)).not.toBeNull();
    const changed = { ...boot, secret: 'second-secret-long-enough', plan: 'business' as const };
    expect(await ensureStartupKey(store, changed)).toMatchObject({ created: false, revoked: false });
    expect(await authenticateKey(store, 'key_bootstrap', boot.secret)).toBeNull();
    expect((await authenticateKey(store, 'key_bootstrap', changed.secret))?.plan).toBe('business');
    await store.accounts.revokeKey('key_bootstrap');
    expect(await ensureStartupKey(store, changed)).toMatchObject({ revoked: true });
    expect(await authenticateKey(store, 'key_bootstrap', changed.secret)).toBeNull();
  });
});

describe('TokenService', () => {
  const key = randomBytes(32);

  it('issues 15-minute HS256 tokens with iss, aud, sub, jti and the key id', async () => {
    const t = new TokenService(key);
    const issued = await t.issue('acc_1', 'key_1');
    expect(issued.expiresIn).toBe(900);
    const [header, payload] = issued.accessToken.split('.').slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()));
    expect(header.alg).toBe('HS256');
    expect(payload).toMatchObject({ iss: TOKEN_ISSUER, aud: TOKEN_AUDIENCE, sub: 'acc_1', key_id: 'key_1' });
    expect(payload.exp - payload.iat).toBe(900);
    expect(typeof payload.jti).toBe('string');
    expect(await t.verify(issued.accessToken)).toMatchObject({ accountId: 'acc_1', keyId: 'key_1' });
  });

  it('answers TOKEN_EXPIRED after 15 minutes and UNAUTHORIZED for every other defect', async () => {
    let now = Date.now();
    const t = new TokenService(key, () => now);
    const { accessToken } = await t.issue('acc_1', 'key_1');
    expect(await codeOf(t.verify(accessToken))).toBe('ok'); // now remembered as verified
    now += 899_000;
    expect(await codeOf(t.verify(accessToken))).toBe('ok');
    now += 2_000;
    expect(await codeOf(t.verify(accessToken))).toBe('TOKEN_EXPIRED');
    now -= 901_000;
    expect(await codeOf(new TokenService(key, () => now + 901_000).verify(accessToken))).toBe('TOKEN_EXPIRED');

    const [h, p, s] = accessToken.split('.') as [string, string, string];
    const tamperedPayload = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: 'acc_2' })).toString('base64url');
    expect(await codeOf(t.verify(`${h}.${tamperedPayload}.${s}`))).toBe('UNAUTHORIZED');
    expect(await codeOf(t.verify(`${h}.${p}.${s.slice(0, -2)}AA`))).toBe('UNAUTHORIZED');
    expect(await codeOf(t.verify('not.a.token'))).toBe('UNAUTHORIZED');

    const claims = { key_id: 'key_1', jti: 'j' };
    const none = new UnsecuredJWT(claims).setIssuer(TOKEN_ISSUER).setAudience(TOKEN_AUDIENCE).setSubject('acc_1').setIssuedAt().setExpirationTime('5m').encode();
    expect(await codeOf(t.verify(none))).toBe('UNAUTHORIZED');

    const otherKey = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuer(TOKEN_ISSUER).setAudience(TOKEN_AUDIENCE).setSubject('acc_1').setIssuedAt().setExpirationTime('5m').sign(randomBytes(32));
    expect(await codeOf(t.verify(otherKey))).toBe('UNAUTHORIZED');

    const hs512 = await new SignJWT(claims).setProtectedHeader({ alg: 'HS512' }).setIssuer(TOKEN_ISSUER).setAudience(TOKEN_AUDIENCE).setSubject('acc_1').setIssuedAt().setExpirationTime('5m').sign(key);
    expect(await codeOf(t.verify(hs512))).toBe('UNAUTHORIZED');

    const wrongAud = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuer(TOKEN_ISSUER).setAudience('other').setSubject('acc_1').setIssuedAt().setExpirationTime('5m').sign(key);
    expect(await codeOf(t.verify(wrongAud))).toBe('UNAUTHORIZED');

    const noKeyId = await new SignJWT({ jti: 'j' }).setProtectedHeader({ alg: 'HS256' }).setIssuer(TOKEN_ISSUER).setAudience(TOKEN_AUDIENCE).setSubject('acc_1').setIssuedAt().setExpirationTime('5m').sign(key);
    expect(await codeOf(t.verify(noKeyId))).toBe('UNAUTHORIZED');
  });
});

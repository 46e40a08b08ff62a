import { join } from 'node:path';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readKeyFile } from '../keys/key-file.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { runKeysCli } from '../keys-cli.ts';
import { TOKEN_AUDIENCE, TOKEN_ISSUER, TokenService } from './tokens.ts';

describe('authentication over HTTP', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.cleanup());

  const list = (token?: string, authorization?: string) =>
    h.request('/api/v1/backup', { ...(token ? { token } : {}), ...(authorization ? { headers: { authorization } } : {}) });

  it('issues a 15-minute bearer token for a valid key and secret', async () => {
    const key = await h.newKey('pro');
    const res = await h.request('/api/v1/auth/token', { method: 'POST', json: { api_key: key.apiKey, secret: key.secret } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ token_type: 'Bearer', expires_in: 900 });
    expect(Date.parse(res.body.data.expires_at) - Date.now()).toBeGreaterThan(890_000);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-ratelimit-limit')).not.toBeNull();
    expect((await list(res.body.data.access_token)).status).toBe(200);
  });

  it('answers INVALID_CREDENTIALS alike for a wrong secret, an unknown key and a revoked key', async () => {
    const key = await h.newKey();
    const revoked = await h.newKey();
    await h.service.services.store.accounts.revokeKey(revoked.apiKey);
    const answers = await Promise.all([
      h.request('/api/v1/auth/token', { method: 'POST', json: { api_key: key.apiKey, secret: key.secret + 'x' } }),
      h.request('/api/v1/auth/token', { method: 'POST', json: { api_key: 'key_01ABCDEFGHJKMNPQRSTVWXYZ00', secret: key.secret } }),
      h.request('/api/v1/auth/token', { method: 'POST', json: { api_key: revoked.apiKey, secret: revoked.secret } }),
    ]);
    for (const a of answers) {
      expect(a.status).toBe(401);
      expect(a.body.error).toEqual({ code: 'INVALID_CREDENTIALS', message: answers[0]!.body.error.message, details: {} });
    }
  });

  it('refuses missing, malformed, tampered, unsigned, foreign and expired tokens', async () => {
    const key = await h.newKey();
    const token = await h.tokenFor(key);
    const [header, payload, sig] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());

    const none = await list();
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHORIZED');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await list(undefined, `Basic ${Buffer.from('a:b').toString('base64')}`)).body.error.code).toBe('UNAUTHORIZED');
    expect((await list('garbage')).body.error.code).toBe('UNAUTHORIZED');

    const other = await h.newKey();
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: other.accountId })).toString('base64url')}.${sig}`;
    expect((await list(tampered)).body.error.code).toBe('UNAUTHORIZED');

    const unsigned = new UnsecuredJWT(claims).encode();
    expect((await list(unsigned)).body.error.code).toBe('UNAUTHORIZED');
    const noneHeader = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    expect((await list(noneHeader)).body.error.code).toBe('UNAUTHORIZED');

    const foreign = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(Buffer.alloc(32, 7));
    expect((await list(foreign)).body.error.code).toBe('UNAUTHORIZED');

    const signingKey = readKeyFile(join(h.dataDir, 'secrets', 'token-signing-key'));
    const past = new TokenService(signingKey, () => Date.now() - 16 * 60_000);
    const expired = await past.issue(key.accountId, key.apiKey);
    const res = await list(expired.accessToken);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('TOKEN_EXPIRED');
    expect(res.headers.get('www-authenticate')).toMatch(/invalid_token/);

    // A correctly signed token for a key of another account is refused as well.
    const mismatched = await new TokenService(signingKey).issue(other.accountId, key.apiKey);
    expect((await list(mismatched.accessToken)).body.error.code).toBe('UNAUTHORIZED');
    expect(claims.iss).toBe(TOKEN_ISSUER);
    expect(claims.aud).toBe(TOKEN_AUDIENCE);
  });

  it('stops every token of a key the moment the key is revoked with the keys command', async () => {
    const out: string[] = [];
    const env = h.env;
    expect(await runKeysCli(['create', '--plan', 'pro'], env, (l) => out.push(l))).toBe(0);
    const apiKey = out.find((l) => l.startsWith('api_key:'))!.split(/\s+/)[1]!;
    const secret = out.find((l) => l.startsWith('secret:'))!.split(/\s+/)[1]!;
    const token = await h.tokenFor({ apiKey, secret, accountId: '', plan: 'pro' });
    expect((await list(token)).status).toBe(200);

    out.length = 0;
    expect(await runKeysCli(['list'], env, (l) => out.push(l))).toBe(0);
    expect(out.some((l) => l.startsWith(apiKey) && l.includes('\tpro\tactive'))).toBe(true);
    expect(out.join('\n')).not.toContain(secret);

    expect(await runKeysCli(['revoke', apiKey], env, () => {})).toBe(0);
    const after = await list(token);
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('UNAUTHORIZED');
    expect(await runKeysCli(['revoke', 'key_missing'], env, () => {})).toBe(1);
    expect(await runKeysCli(['create', '--plan', 'gold'], env, () => {})).toBe(64);
  });

  it('counts requests without a valid token as failed authentications of the address, 30 per hour', async () => {
    const fresh = await startHarness();
    try {
      let last;
      for (let i = 0; i < 30; i++) {
        last = await fresh.request('/api/v1/backup', { token: 'bad.token.value' });
        expect(last.status).toBe(401);
      }
      expect(last!.headers.get('x-ratelimit-limit')).toBe('30');
      expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');
      const still = await fresh.request('/api/v1/backup', { token: 'bad.token.value' });
      expect(still.status).toBe(401);
      expect(still.headers.get('x-ratelimit-remaining')).toBe('0');
      // With its failures used up, the address cannot even log in with good credentials.
      const key = await fresh.newKey();
      const login = await fresh.request('/api/v1/auth/token', { method: 'POST', json: { api_key: key.apiKey, secret: key.secret } });
      expect(login.status).toBe(429);
      expect(login.body.error.code).toBe('RATE_LIMITED');
      expect(Number(login.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await fresh.cleanup();
    }
  });
});

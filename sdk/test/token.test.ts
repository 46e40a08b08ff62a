import { describe, expect, it } from 'vitest';
import { createTokenSource } from '../src/token.ts';

const api = new URL('http://127.0.0.1/api/v1/backup');
const publicUrl = new URL('http://127.0.0.1/api/v1/status');

function source(clock: { t: number }, lifetime = 900) {
  const calls: number[] = [];
  const tokens = createTokenSource({
    obtain: async () => {
      calls.push(clock.t);
      return { access_token: `tok${calls.length}`, expires_in: lifetime };
    },
    needsToken: (url) => !url.pathname.endsWith('/status'),
    now: () => clock.t,
  });
  return { tokens, calls };
}

describe('token source', () => {
  it('fetches once, reuses, and renews a minute before expiry', async () => {
    const clock = { t: 1_000_000 };
    const { tokens, calls } = source(clock);
    expect(await tokens.tokenFor(api, 'GET')).toBe('tok1');
    clock.t += 839_000;
    expect(await tokens.tokenFor(api, 'GET')).toBe('tok1');
    clock.t += 1_000; // 840 s after issue: 60 s before the 900 s expiry
    expect(await tokens.tokenFor(api, 'GET')).toBe('tok2');
    expect(calls).toHaveLength(2);
  });

  it('keeps the margin within half of a short lifetime', async () => {
    const clock = { t: 0 };
    const { tokens } = source(clock, 10);
    expect(await tokens.tokenFor(api, 'GET')).toBe('tok1');
    clock.t = 4_999;
    expect(await tokens.tokenFor(api, 'GET')).toBe('tok1');
    clock.t = 5_000;
    expect(await tokens.tokenFor(api, 'GET')).toBe('tok2');
  });

  it('shares one token request between concurrent calls', async () => {
    const { tokens, calls } = source({ t: 0 });
    const all = await Promise.all([tokens.tokenFor(api, 'GET'), tokens.tokenFor(api, 'GET'), tokens.tokenFor(api, 'GET')]);
    expect(all).toEqual(['tok1', 'tok1', 'tok1']);
    expect(calls).toHaveLength(1);
  });

  it('sends no token to public operations', async () => {
    const { tokens, calls } = source({ t: 0 });
    expect(await tokens.tokenFor(publicUrl, 'GET')).toBeUndefined();
    expect(calls).toHaveLength(0);
  });

  it('fetches a new token after expire(current), ignores expire(stale)', async () => {
    const { tokens, calls } = source({ t: 0 });
    expect(await tokens.tokenFor(api, 'GET')).toBe('tok1');
    tokens.expire('other');
    expect(await tokens.tokenFor(api, 'GET')).toBe('tok1');
    tokens.expire('tok1');
    expect(await tokens.tokenFor(api, 'GET')).toBe('tok2');
    expect(calls).toHaveLength(2);
  });

  it('retries obtaining after a failed token request', async () => {
    let fail = true;
    const tokens = createTokenSource({
      obtain: async () => {
        if (fail) throw new Error('INVALID_CREDENTIALS');
        return { access_token: 'ok', expires_in: 900 };
      },
      needsToken: () => true,
    });
    await expect(tokens.tokenFor(api, 'GET')).rejects.toThrow('INVALID_CREDENTIALS');
    fail = false;
    expect(await tokens.tokenFor(api, 'GET')).toBe('ok');
  });
});

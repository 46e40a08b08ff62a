import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planLimit } from '../ratelimit/limits.ts';
import { openPostgresStore } from '../store/postgres/index.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { startPostgres, type PostgresServer } from '../testing/services/postgres.ts';
import { createApiKey } from './api-keys.ts';
import { KEY_CHANGES_SEEN_WITHIN_MS } from './key-cache.ts';

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Two instances on one PostgreSQL, each caching the keys its bearer tokens name. */
describe('the key cache across instances', () => {
  let pg: PostgresServer;
  let url: string;
  let dir: string;
  let a: Harness;
  let b: Harness;
  beforeAll(async () => {
    pg = await startPostgres();
    url = await pg.createDatabase();
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'key-cache-')));
    // One data directory: the token signing key is shared, so a token from one is good on the other.
    a = await startHarness({ DATABASE_URL: url }, {}, dir);
    b = await startHarness({ DATABASE_URL: url }, {}, dir);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await pg?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const list = (h: Harness, token: string) => h.request('/api/v1/backup', { token });

  it('refuses on every instance a key revoked on one, within the stated bound', async () => {
    const revoked = await a.newKey('pro');
    const other = await createApiKey(a.service.services.store, { plan: 'pro', accountId: revoked.accountId });
    const token = await a.tokenFor(revoked);
    const otherToken = await a.tokenFor(other);
    // Both instances have looked the keys up (and cached them).
    for (const h of [a, b]) {
      expect((await list(h, token)).status).toBe(200);
      expect((await list(h, otherToken)).status).toBe(200);
    }
    expect(await a.service.services.store.accounts.revokeKey(revoked.apiKey)).toBe(true);
    await wait(KEY_CHANGES_SEEN_WITHIN_MS);
    for (const h of [b, a]) {
      const res = await list(h, token);
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
      // The account's other key is still good: the cache dropped what it held and read it again.
      expect((await list(h, otherToken)).status).toBe(200);
    }
  });

  it('sees changes made outside every instance (the keys command, an operator) within the bound too', async () => {
    const key = await b.newKey('free_trial');
    const token = await b.tokenFor(key);
    for (const h of [a, b]) expect((await list(h, token)).headers.get('x-ratelimit-limit')).toBe(String(planLimit('free_trial')));
    const outside = await openPostgresStore(url);
    try {
      await outside.accounts.setPlan(key.accountId, 'business');
      await wait(KEY_CHANGES_SEEN_WITHIN_MS);
      for (const h of [a, b]) expect((await list(h, token)).headers.get('x-ratelimit-limit')).toBe(String(planLimit('business')));
      expect(await outside.accounts.revokeKey(key.apiKey)).toBe(true);
    } finally {
      await outside.close();
    }
    await wait(KEY_CHANGES_SEEN_WITHIN_MS);
    for (const h of [a, b]) expect((await list(h, token)).status).toBe(401);
  });
});

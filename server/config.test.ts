import { homedir } from 'node:os';
import { delimiter } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

describe('loadConfig', () => {
  it('has safe defaults with no environment', () => {
    const c = loadConfig({}, '/srv/app');
    expect(c.port).toBe(8080);
    expect(c.dataDir).toBe('/srv/app/data');
    expect(c.allowedRoots).toEqual([homedir()]);
    expect(c.bootstrap).toBeNull();
    expect(c.trustProxy).toBe(false);
    expect(c.validateResponses).toBe(true);
    expect(c.rateLimitsEnabled).toBe(true);
    expect(c.checkSiteAllowPrivate).toBe(false);
    expect(c.jobConcurrency).toBe(2);
    expect(c.warmUpRequests).toBe(1000);
  });

  it('reads every variable', () => {
    const c = loadConfig(
      {
        PORT: '9000',
        DATA_DIR: 'var/d',
        BACKUP_ALLOWED_ROOTS: ['/a', '/b/../c', ''].join(delimiter),
        BACKUP_BOOTSTRAP_API_KEY: 'key_bootstrap',
        BACKUP_BOOTSTRAP_SECRET: 'a-long-enough-secret',
        BACKUP_BOOTSTRAP_PLAN: 'business',
        TRUST_PROXY: 'loopback',
        JOB_CONCURRENCY: '4',
        VALIDATE_RESPONSES: 'false',
        RATE_LIMITS: 'off',
        CHECK_SITE_ALLOW_PRIVATE: 'true',
        WARM_UP_REQUESTS: '0',
      },
      '/srv',
    );
    expect(c.port).toBe(9000);
    expect(c.dataDir).toBe('/srv/var/d');
    expect(c.allowedRoots).toEqual(['/a', '/c']);
    expect(c.bootstrap).toEqual({ apiKey: 'key_bootstrap', secret: 'a-long-enough-secret', plan: 'business' });
    expect(c.trustProxy).toEqual(['loopback']);
    expect(c.jobConcurrency).toBe(4);
    expect(c.validateResponses).toBe(false);
    expect(c.rateLimitsEnabled).toBe(false);
    expect(c.checkSiteAllowPrivate).toBe(true);
    expect(c.warmUpRequests).toBe(0);
  });

  it('an empty BACKUP_ALLOWED_ROOTS allows nothing', () => {
    expect(loadConfig({ BACKUP_ALLOWED_ROOTS: '' }).allowedRoots).toEqual([]);
  });

  it('rejects bad values', () => {
    expect(() => loadConfig({ PORT: '70000' })).toThrow(ConfigError);
    expect(() => loadConfig({ BACKUP_ALLOWED_ROOTS: 'relative/dir' })).toThrow(ConfigError);
    expect(() => loadConfig({ BACKUP_BOOTSTRAP_API_KEY: 'key_x' })).toThrow(/together/);
    expect(() => loadConfig({ BACKUP_BOOTSTRAP_API_KEY: 'key_x', BACKUP_BOOTSTRAP_SECRET: 'x'.repeat(20), BACKUP_BOOTSTRAP_PLAN: 'gold' })).toThrow(/plan|one of/);
    expect(() => loadConfig({ VALIDATE_RESPONSES: 'maybe' })).toThrow(ConfigError);
    // Above 10,000 the warm-up's clients would reach contact's per-address limit.
    expect(() => loadConfig({ WARM_UP_REQUESTS: '10001' })).toThrow(/WARM_UP_REQUESTS/);
    expect(() => loadConfig({ BACKUP_BOOTSTRAP_API_KEY: 'bootstrap', BACKUP_BOOTSTRAP_SECRET: 'x'.repeat(20) })).toThrow(/key_/);
    expect(() => loadConfig({ BACKUP_BOOTSTRAP_API_KEY: 'key_x', BACKUP_BOOTSTRAP_SECRET: 'short' })).toThrow(/16/);
  });

  it('parses TRUST_PROXY forms', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, loopback' }).trustProxy).toEqual(['10.0.0.0/8', 'loopback']);
    expect(() => loadConfig({ TRUST_PROXY: 'not-an-address' })).toThrow(ConfigError);
  });
});

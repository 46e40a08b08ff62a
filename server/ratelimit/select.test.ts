import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.ts';

describe('REDIS_URL', () => {
  it('is unset by default: counters stay in the process', () => {
    expect(loadConfig({}).redisUrl).toBeUndefined();
    expect(loadConfig({ REDIS_URL: ' ' }).redisUrl).toBeUndefined();
  });

  it.each(['redis://127.0.0.1:6379', 'redis://:pw@cache.internal:6380/2', 'rediss://user:pw@cache.internal'])('accepts %s', (url) => {
    expect(loadConfig({ REDIS_URL: url }).redisUrl).toBe(url);
  });

  it.each([
    ['cache:6379', /REDIS_URL must start with redis:\/\//],
    ['http://cache:6379', /REDIS_URL must start with redis:\/\//],
    ['redis://cache:6379/zero', /database number/],
    ['not a url', /REDIS_URL is not a URL/],
  ])('refuses %s naming the variable', (url, message) => {
    expect(() => loadConfig({ REDIS_URL: url })).toThrow(ConfigError);
    expect(() => loadConfig({ REDIS_URL: url })).toThrow(message);
  });

  it('never repeats a password in its message', () => {
    expect(() => loadConfig({ REDIS_URL: 'redis://:hunter2@cache:6379/db' })).toThrow(/\*\*\*/);
    expect(() => loadConfig({ REDIS_URL: 'redis://:hunter2@cache:6379/db' })).not.toThrow(/hunter2/);
  });
});

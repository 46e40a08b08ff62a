import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadOrCreateSecret } from './secrets.ts';

describe('loadOrCreateSecret', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('creates a 0600 file once and returns the same bytes afterwards', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secrets-'));
    dirs.push(dir);
    const a = loadOrCreateSecret(dir, 'jwt-signing-key', 32);
    const b = loadOrCreateSecret(dir, 'jwt-signing-key', 32);
    expect(a.length).toBe(32);
    expect(b.equals(a)).toBe(true);
    expect(statSync(join(dir, 'secrets', 'jwt-signing-key')).mode & 0o777).toBe(0o600);
    expect(loadOrCreateSecret(dir, 'other', 32).equals(a)).toBe(false);
  });
});

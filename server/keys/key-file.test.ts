import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startRefusal } from '../start-refusal.ts';
import { KeyFileExposedError, loadOrCreateKeyFile, readKeyFile, writeKeyFile } from './key-file.ts';

describe('key files', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('creates a 0600 file in a 0700 directory once and returns the same bytes afterwards', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keys-'));
    dirs.push(dir);
    const file = join(dir, 'config', 'backup-service', 'signing.key');
    const a = loadOrCreateKeyFile(file, 32);
    const b = loadOrCreateKeyFile(file, 32);
    expect(a.length).toBe(32);
    expect(b.equals(a)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'config', 'backup-service')).mode & 0o777).toBe(0o700);
    expect(loadOrCreateKeyFile(join(dir, 'other.key'), 32).equals(a)).toBe(false);
  });

  it('never replaces an existing key file and leaves no temporary file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keys-'));
    dirs.push(dir);
    const file = join(dir, 'k');
    expect(writeKeyFile(file, Buffer.alloc(32, 1))).toBe(true);
    expect(writeKeyFile(file, Buffer.alloc(32, 2))).toBe(false);
    expect(loadOrCreateKeyFile(file).equals(Buffer.alloc(32, 1))).toBe(true);
    expect(readdirSync(dir)).toEqual(['k']);
  });

  it('refuses a key file that group or others may read, and the server will not start on it (exit 78)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keys-'));
    dirs.push(dir);
    const file = join(dir, 'master.key');
    writeKeyFile(file, Buffer.alloc(32, 3));
    chmodSync(file, 0o644);
    let err: unknown;
    try {
      readKeyFile(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KeyFileExposedError);
    expect(startRefusal(err)).toEqual({ code: 78, message: `Configuration error: ${file} is open to other users of the host (mode 0644); make it the service user's alone: chmod 600 ${file}` });
    chmodSync(file, 0o600);
    expect(readKeyFile(file).equals(Buffer.alloc(32, 3))).toBe(true);
  });
});

import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AuditLog } from './log.ts';
import { scrubSecrets } from './refused-settings.ts';

describe('AuditLog on a file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'audit-log-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const lineOf = (i: number) => ({ account_id: null, request_id: `req-${i}`, n: i, pad: 'x'.repeat(80) });

  it('rotates by size, keeps the configured number of old files, all 0600, losing no line in between', () => {
    const file = join(dir, 'logs', 'audit.log');
    const log = AuditLog.open({ file, maxBytes: 4096, keep: 3 });
    for (let i = 0; i < 200; i++) log.record('test.event', lineOf(i));
    log.close();
    const names = readdirSync(join(dir, 'logs')).sort();
    expect(names).toEqual(['audit.log', 'audit.log.1', 'audit.log.2', 'audit.log.3']);
    for (const name of names) expect(statSync(join(dir, 'logs', name)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'logs')).mode & 0o777).toBe(0o700);
    // Oldest to newest, the kept files hold consecutive lines ending with the last one written.
    const kept = ['audit.log.3', 'audit.log.2', 'audit.log.1', 'audit.log'].flatMap((name) =>
      readFileSync(join(dir, 'logs', name), 'utf8').trimEnd().split('\n').filter(Boolean).map((l) => JSON.parse(l).n as number),
    );
    expect(kept.at(-1)).toBe(199);
    expect(kept).toEqual(kept.map((_, i) => kept[0]! + i));
    for (const name of names.slice(1)) expect(statSync(join(dir, 'logs', name)).size).toBeGreaterThanOrEqual(4096);
  });

  it('tightens an existing file to 0600 and follows the name when another process rotates it away', () => {
    const file = join(dir, 'shared.log');
    writeFileSync(file, '');
    chmodSync(file, 0o644);
    const log = AuditLog.open({ file, maxBytes: 1 << 20, keep: 2 });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    log.record('first', lineOf(1));
    renameSync(file, `${file}.moved`);
    log.record('second', lineOf(2));
    log.close();
    expect(readFileSync(`${file}.moved`, 'utf8')).toContain('"event":"first"');
    expect(readFileSync(file, 'utf8')).toContain('"event":"second"');
  });

  it('refuses a path it cannot open, naming AUDIT_LOG', () => {
    const blocker = join(dir, 'a-file');
    writeFileSync(blocker, '');
    expect(() => AuditLog.open({ file: join(blocker, 'audit.log'), maxBytes: 4096, keep: 1 })).toThrow(/^AUDIT_LOG cannot be opened/);
  });
});

describe('scrubSecrets', () => {
  it('blanks the values of secret-named variables and credentials in URLs', () => {
    const env = { MASTER_KEY: 'mk-abcdef123456', DATABASE_URL: 'postgres://app:pa55word@db:5432/x', PORT: '8080' };
    const message = 'MASTER_KEY must be 32 bytes, got "mk-abcdef123456"; DATABASE_URL postgres://app:pa55word@db:5432/x is unreachable; PORT 8080';
    const out = scrubSecrets(message, env);
    expect(out).not.toContain('mk-abcdef123456');
    expect(out).not.toContain('pa55word');
    expect(out).toContain('PORT 8080');
    expect(out).toContain('postgres://[redacted]@db:5432/x');
  });
});

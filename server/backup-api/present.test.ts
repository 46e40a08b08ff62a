import { describe, expect, it } from 'vitest';
import type { BackupJob } from '../store/index.ts';
import { durationSeconds, octalMode, presentBackup, presentFile } from './present.ts';

const base: BackupJob = {
  id: 'bkp_01ARZ3NDEKTSV4RRFFQ69G5FAV',
  kind: 'backup',
  accountId: 'acc_x',
  repository: 'acc_x/cloud',
  status: 'running',
  createdAt: '2026-01-01T00:00:00.000Z',
  startedAt: '2026-01-01T00:00:01.000Z',
  finishedAt: null,
  progress: { filesDone: 3, filesTotal: 10, bytesDone: 300, bytesTotal: 1000 },
  error: null,
  warnings: { count: 0, items: [] },
  source: '/data',
  destination: 'cloud',
  compression: 'zstd',
  encryption: true,
  deduplication: true,
  filesBackedUp: 0,
  sizeBytes: 0,
  storedBytes: 0,
  snapshotId: null,
};

describe('presenting jobs and files', () => {
  it('counts whole seconds from start to finish, or to now while running, 0 before start', () => {
    expect(durationSeconds({ startedAt: null, finishedAt: null })).toBe(0);
    expect(durationSeconds({ startedAt: '2026-01-01T00:00:00.000Z', finishedAt: '2026-01-01T00:01:00.400Z' })).toBe(60);
    expect(durationSeconds({ startedAt: '2026-01-01T00:00:00.000Z', finishedAt: null }, Date.parse('2026-01-01T00:00:05.600Z'))).toBe(6);
  });

  const kinds = { kindOf: (name: string) => (name === 'cloud' ? 's3' : null) } as const;

  it('shows a running backup its counts so far and a finished one its result', () => {
    expect(presentBackup(base, kinds)).toMatchObject({ files_backed_up: 3, size_bytes: 300, options: { compression: 'zstd', encryption: true, deduplication: true } });
    const done = presentBackup({ ...base, status: 'completed', finishedAt: '2026-01-01T00:00:03.000Z', filesBackedUp: 12, sizeBytes: 1000, storedBytes: 400 }, kinds);
    expect(done).toMatchObject({ files_backed_up: 12, size_bytes: 1000, stored_bytes: 400, duration_seconds: 2 });
    expect(done).not.toHaveProperty('snapshot_id');
    expect(done).not.toHaveProperty('account_id');
  });

  it('says where the destination is kept now, and null once it is no longer configured', () => {
    expect(presentBackup(base, kinds).destination_kind).toBe('s3');
    expect(presentBackup({ ...base, destination: 'gone' }, kinds).destination_kind).toBeNull();
  });

  it('writes modes as four octal digits, and link targets for symlinks (null for the rest)', () => {
    expect(octalMode(0o100644)).toBe('0644');
    expect(octalMode(0o104755)).toBe('4755');
    expect(presentFile({ path: Buffer.from('a'), type: 'file', sizeBytes: 1, mode: 0o100600, modifiedAt: 'x', sha256: 'ab', linkTarget: null })).toEqual({ path: 'a', type: 'file', size_bytes: 1, mode: '0600', modified_at: 'x', sha256: 'ab', link_target: null });
    expect(presentFile({ path: Buffer.from('l'), type: 'symlink', sizeBytes: 0, mode: 0o120777, modifiedAt: 'x', sha256: null, linkTarget: Buffer.from('a') })).toMatchObject({ link_target: 'a', sha256: null });
  });

  it('shows byte names in the escaped form: non-UTF-8 bytes and backslashes as \\xHH', () => {
    const name = Buffer.from([0x72, 0xe9, 0x2f, 0x5c, 0x61]); // "r", a Latin-1 é, "/", a backslash, "a"
    expect(presentFile({ path: name, type: 'symlink', sizeBytes: 0, mode: 0o777, modifiedAt: 'x', sha256: null, linkTarget: Buffer.from([0xff]) })).toMatchObject({
      path: 'r\\xe9/\\x5ca',
      link_target: '\\xff',
    });
  });
});

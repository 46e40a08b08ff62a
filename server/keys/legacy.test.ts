import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unlockLegacyKey } from '../engine/index.ts';
import { LocalBackend } from '../engine/storage/local.ts';
import { startHarness, type Harness } from '../testing/harness.ts';

const FIXTURE = join(import.meta.dirname, '..', 'testing', 'fixtures', 'legacy-1.0.0', 'data-dir.tar.gz');

interface Manifest {
  api_key: string;
  secret: string;
  backups: Record<string, { id: string; destination: string; files?: Record<string, { type: string; mode?: string; size?: number; sha256?: string; target?: string }> }>;
}

describe('a data directory written by 1.0.0', () => {
  let dir: string;
  let manifest: Manifest;
  let legacyPassword: string;
  let h: Harness;
  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'legacy-')));
    execFileSync('tar', ['xzf', FIXTURE, '-C', dir]);
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
    legacyPassword = readFileSync(join(dir, 'data', 'secrets', 'repository-password'), 'utf8').trim();
    h = await startHarness({}, {}, dir);
  });
  afterAll(async () => {
    await h?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is migrated at start: its key works, its backups and files are listed, a restore is byte-identical to the manifest', async () => {
    const token = await h.tokenFor({ apiKey: manifest.api_key, secret: manifest.secret, accountId: '', plan: 'pro' });
    const listed = await h.request('/api/v1/backup?limit=10', { token });
    expect(listed.status).toBe(200);
    expect(listed.body.data.items.map((b: { id: string }) => b.id).sort()).toEqual(Object.values(manifest.backups).map((b) => b.id).sort());
    for (const b of listed.body.data.items) expect(b.status).toBe('completed');

    const first = manifest.backups.first!;
    const expected = first.files!;
    const files = await h.request(`/api/v1/files?backup_id=${first.id}&limit=100`, { token });
    expect(files.status).toBe(200);
    const byteOrder = Object.keys(expected).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(files.body.data.items.map((f: { path: string }) => f.path)).toEqual(byteOrder);
    for (const f of files.body.data.items) {
      const want = expected[f.path]!;
      expect(f.type).toBe(want.type);
      if (want.type === 'file') expect({ size: f.size_bytes, sha256: f.sha256, mode: f.mode }).toEqual({ size: want.size, sha256: want.sha256, mode: `0${want.mode}` });
      if (want.type === 'symlink') expect(f.link_target).toBe(want.target);
    }

    const target = join(h.root, 'restored');
    const restore = await h.request('/api/v1/restore', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { backup_id: first.id, target_path: target } });
    expect(restore.body.data).toMatchObject({ status: 'completed', files_restored: Object.values(expected).filter((f) => f.type !== 'directory').length }); // files and symlinks
    for (const [path, want] of Object.entries(expected)) {
      const p = join(target, path);
      const st = lstatSync(p);
      if (want.type === 'symlink') expect(readlinkSync(p)).toBe(want.target);
      else expect((st.mode & 0o777).toString(8)).toBe(want.mode);
      if (want.type === 'file') expect(createHash('sha256').update(readFileSync(p)).digest('hex')).toBe(want.sha256);
      if (want.type === 'directory') expect(st.isDirectory()).toBe(true);
    }
  });

  it('gives each repository its own key in the store and removes the password that opened them all', async () => {
    expect(await h.service.services.store.keys.countRepositoryKeys()).toBe(2);
    expect(existsSync(join(h.dataDir, 'secrets', 'repository-password'))).toBe(false);
    // Nothing left in DATA_DIR opens a repository: its one secret file signs tokens only.
    expect(readdirSync(join(h.dataDir, 'secrets'))).toEqual(['token-signing-key']);
    const repo = join(h.dataDir, 'repositories', readdirSync(join(h.dataDir, 'repositories'))[0]!, 'cloud');
    const candidate = readFileSync(join(h.dataDir, 'secrets', 'token-signing-key'), 'utf8').trim();
    await expect(unlockLegacyKey(new LocalBackend(repo), { password: candidate })).rejects.toMatchObject({ code: 'WRONG_PASSWORD' });
    // 1.0.0 left the database world-readable; the current server keeps it to its owner.
    expect(statSync(join(h.dataDir, 'service.db')).mode & 0o777).toBe(0o600);
    expect(statSync(h.dataDir).mode & 0o777).toBe(0o700);
    expect(legacyPassword.length).toBeGreaterThan(20);
  });

  it('backs up into a migrated repository, and restores that too', async () => {
    const token = await h.tokenFor({ apiKey: manifest.api_key, secret: manifest.secret, accountId: '', plan: 'pro' });
    const src = join(h.root, 'restored');
    const backup = await h.request('/api/v1/backup', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { source: src } });
    expect(backup.body.data).toMatchObject({ status: 'completed', destination: 'cloud' });
    const again = await h.request('/api/v1/restore', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { backup_id: backup.body.data.id, target_path: join(h.root, 'again') } });
    expect(again.body.data.status).toBe('completed');
    expect(readFileSync(join(h.root, 'again', 'notes.txt'))).toEqual(readFileSync(join(src, 'notes.txt')));
  });
});

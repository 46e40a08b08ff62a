import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Repository, backup, check, forget, listEntries, prune, restore, unlockLegacyKey, verify } from './index.ts';
import type { MasterKey } from './index.ts';
import { LocalBackend } from './storage/local.ts';
import { describeTree, tempDir } from './testing/fixtures.ts';
import type { TreeDescription } from './testing/fixtures.ts';
import { t } from './testing/repo.ts';

/**
 * Repositories written by 1.0.0 (format 1: keys/, one tree object per snapshot) stay readable,
 * and new backups go into them: the data directory of the fixture was written by that version.
 */
interface Manifest {
  backups: {
    first: { id: string; files: Record<string, { type: string; mode?: string; size?: number; sha256?: string; target?: string }> };
    second: { id: string; changed: Record<string, string> };
    reports_local_plain_gzip: { id: string };
  };
}

let dir: string;
let cleanup: () => Promise<void>;
let manifest: Manifest;
let password: string;
let snapshotOf: Map<string, string>;
let repoDir: (destination: string) => string;

beforeAll(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-legacy-'));
  execFileSync('tar', ['xzf', join(import.meta.dirname, '../testing/fixtures/legacy-1.0.0/data-dir.tar.gz'), '-C', dir]);
  manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  password = (await readFile(join(dir, 'data/secrets/repository-password'), 'utf8')).trim();
  const db = new DatabaseSync(join(dir, 'data/service.db'), { readOnly: true });
  const rows = db.prepare('SELECT id, account_id, snapshot_id FROM backup_jobs').all() as { id: string; account_id: string; snapshot_id: string }[];
  db.close();
  snapshotOf = new Map(rows.map((r) => [r.id, r.snapshot_id]));
  repoDir = (destination) => join(dir, 'data/repositories', rows[0]!.account_id, destination);
});
afterAll(async () => {
  await cleanup();
});

const keys = new Map<string, Promise<MasterKey>>();

/** Opens a repository with the key unwrapped (once: scrypt is slow on purpose) from its key file. */
async function open(destination: string): Promise<Repository> {
  const backend = new LocalBackend(repoDir(destination));
  if (!keys.has(destination)) keys.set(destination, unlockLegacyKey(backend, { password }));
  return Repository.open(backend, await keys.get(destination)!);
}

/** The manifest's description of the first backup, as describeTree reports a restored tree. */
function expected(prefix = ''): TreeDescription {
  const out: TreeDescription = {};
  for (const [path, e] of Object.entries(manifest.backups.first.files)) {
    if (!path.startsWith(prefix)) continue;
    const rel = path.slice(prefix.length);
    if (e.type === 'symlink') out[rel] = { type: 'symlink', mode: 0, link: e.target! };
    else if (e.type === 'directory') out[rel] = { type: 'directory', mode: Number.parseInt(e.mode!, 8) };
    else out[rel] = { type: 'file', mode: Number.parseInt(e.mode!, 8), size: e.size!, sha256: e.sha256! };
  }
  return out;
}

describe('a format-1 repository', () => {
  it('opens with the key unwrapped from its key file, and refuses a wrong password', async () => {
    const repo = await open('cloud');
    expect(repo.version).toBe(1);
    expect((await repo.snapshots()).map((s) => s.id).sort()).toEqual([manifest.backups.first.id, manifest.backups.second.id].map((id) => snapshotOf.get(id)!).sort());
    await expect(unlockLegacyKey(new LocalBackend(repoDir('cloud')), { password: 'wrong' })).rejects.toMatchObject({ code: 'WRONG_PASSWORD' });
    expect((await verify(repo)).errors).toEqual([]);
  });

  it('restores every snapshot byte-identical to the manifest, and lists their entries', async () => {
    const cloud = await open('cloud');
    const first = join(dir, 'out-first');
    const r1 = await restore(cloud, snapshotOf.get(manifest.backups.first.id)!, { target: first, overwrite: 'never' });
    expect(r1.warnings.count).toBe(0);
    expect(await describeTree(first, { mtimes: false })).toEqual(expected());

    const second = join(dir, 'out-second');
    await restore(cloud, snapshotOf.get(manifest.backups.second.id)!, { target: second, overwrite: 'never' });
    const want = expected();
    for (const [path, sha256] of Object.entries(manifest.backups.second.changed)) {
      want[path] = { ...want[path]!, sha256 };
      delete want[path]!.size;
    }
    const got = await describeTree(second, { mtimes: false });
    for (const path of Object.keys(manifest.backups.second.changed)) delete got[path]!.size;
    expect(got).toEqual(want);

    const local = await open('local');
    const reports = join(dir, 'out-reports');
    await restore(local, snapshotOf.get(manifest.backups.reports_local_plain_gzip.id)!, { target: reports, overwrite: 'never' });
    expect(await describeTree(reports, { mtimes: false })).toEqual(expected('reports/'));

    const listed: string[] = [];
    for await (const e of listEntries(cloud, snapshotOf.get(manifest.backups.first.id)!)) listed.push(t(e.path));
    expect(listed.sort()).toEqual(Object.keys(manifest.backups.first.files).sort());
  });

  it('takes new backups (format 2) beside its old snapshots, and restores them', async () => {
    for (const destination of ['cloud', 'local']) {
      const repo = await open(destination);
      const src = join(dir, 'out-first');
      const result = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
      expect(result.warnings.count).toBe(0);
      expect(result.files).toBe(6); // 5 regular files and a symlink
      const out = join(dir, `out-new-${destination}`);
      await restore(repo, result.snapshotId, { target: out, overwrite: 'never' });
      expect(await describeTree(out)).toEqual(await describeTree(src));
      expect((await verify(repo, result.snapshotId)).errors).toEqual([]);
      const again = await open(destination);
      expect((await again.snapshots()).map((s) => s.version)).toContain(2);
    }
  });

  it('checks with every pack read, and prunes: a forgotten 1.0.0 snapshot goes, the other still restores', async () => {
    const repo = await open('cloud');
    const checked = await check(repo, { readData: true });
    expect(checked.problems.map((p) => p.message)).toEqual([]);
    expect(checked.ok).toBe(true);
    await forget(repo, snapshotOf.get(manifest.backups.first.id)!);
    await expect(readFile(join(repoDir('cloud'), 'trees', snapshotOf.get(manifest.backups.first.id)!))).rejects.toMatchObject({ code: 'ENOENT' });
    await prune(repo);
    const after = await open('cloud');
    expect((await check(after, { readData: true })).ok).toBe(true);
    const second = join(dir, 'out-second-after-prune');
    await restore(after, snapshotOf.get(manifest.backups.second.id)!, { target: second, overwrite: 'never' });
    expect(await describeTree(second, { mtimes: false })).toEqual(await describeTree(join(dir, 'out-second'), { mtimes: false }));
  });
});

import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, renameSync, rmSync, statSync, writeSync, closeSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../testing/harness.ts';

const MiB = 1024 * 1024;

function du(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) n += statSync(join(e.parentPath, e.name)).size;
  return n;
}

function files(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.set(relative(dir, join(e.parentPath, e.name)), readFileSync(join(e.parentPath, e.name)).toString('base64'));
  }
  return out;
}

describe('Repository lifecycle over real HTTP: delete, retention, prune, check, usage', () => {
  let h: Harness;
  let token: string;
  let accountId: string;
  let repoDir: string;
  const wait = { Prefer: 'wait=30' };

  const backupOf = async (source: string): Promise<any> => {
    const r = await h.request('/api/v1/backup', { method: 'POST', token, json: { source }, headers: wait });
    expect(r.body.data).toMatchObject({ status: 'completed' });
    return r.body.data;
  };
  const maintenance = async (path: '/api/v1/prune' | '/api/v1/check', json: object): Promise<any> => {
    const r = await h.request(path, { method: 'POST', token, json, headers: wait });
    expect(r.status).toBe(202);
    expect(r.headers.get('location')).toBe(`/api/v1/maintenance/${r.body.data.id}`);
    expect(['completed', 'failed']).toContain(r.body.data.status);
    return r.body.data;
  };

  beforeAll(async () => {
    h = await startHarness();
    const key = await h.newKey('business');
    accountId = key.accountId;
    token = await h.tokenFor(key);
    repoDir = join(h.dataDir, 'repositories', accountId, 'cloud');
  });
  afterAll(() => h.cleanup());

  it('deletes a backup, prunes as the dry run predicted, checks, and the rest restores; usage adds up', async () => {
    const a = join(h.root, 'a');
    const b = join(h.root, 'b');
    mkdirSync(a);
    mkdirSync(join(b, 'docs'), { recursive: true });
    for (let i = 0; i < 3; i++) writeFileSync(join(a, `big${i}.bin`), randomBytes(4 * MiB + i));
    writeFileSync(join(b, 'docs', 'b.bin'), randomBytes(2 * MiB));
    writeFileSync(join(b, 'notes.txt'), 'notes\n'.repeat(100));
    const backupA = await backupOf(a);
    const backupB = await backupOf(b);

    // stored_bytes: the backups' sum plus the repository's config is what is on disk.
    const usage0 = (await h.request('/api/v1/usage', { token })).body.data.destinations;
    const cloud0 = usage0.find((d: any) => d.destination === 'cloud');
    const config = statSync(join(repoDir, 'config')).size;
    expect(cloud0).toMatchObject({ backups: 2, logical_bytes: backupA.size_bytes + backupB.size_bytes, reclaimable_bytes: null, reclaimable_as_of: null });
    expect(cloud0.stored_bytes).toBe(du(repoDir));
    expect(Math.abs(backupA.stored_bytes + backupB.stored_bytes + config - cloud0.stored_bytes)).toBeLessThanOrEqual(0.01 * cloud0.stored_bytes);
    expect(usage0.find((d: any) => d.destination === 'local')).toMatchObject({ backups: 0, stored_bytes: 0 });

    const deleted = await h.request(`/api/v1/backup/${backupA.id}`, { method: 'DELETE', token });
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.id).toBe(backupA.id);
    expect((await h.request(`/api/v1/backup/${backupA.id}`, { token })).status).toBe(404);
    expect((await h.request(`/api/v1/backup/${backupA.id}`, { method: 'DELETE', token })).body.error.code).toBe('BACKUP_NOT_FOUND');

    const before = du(repoDir);
    const dry = await maintenance('/api/v1/prune', { dry_run: true });
    expect(dry).toMatchObject({ kind: 'prune', status: 'completed', trigger: 'request', options: { dry_run: true }, error: null });
    expect(du(repoDir)).toBe(before);
    const usage1 = (await h.request('/api/v1/usage', { token })).body.data.destinations.find((d: any) => d.destination === 'cloud');
    expect(usage1).toMatchObject({ backups: 1, reclaimable_bytes: dry.result.bytes_deleted, reclaimable_as_of: dry.finished_at });

    const pruned = await maintenance('/api/v1/prune', {});
    expect(pruned).toMatchObject({ kind: 'prune', status: 'completed', result: { dry_run: false, backups: 1 } });
    const after = du(repoDir);
    expect(before - after).toBeGreaterThanOrEqual(0.9 * backupA.stored_bytes);
    expect(Math.abs(dry.result.bytes_deleted - pruned.result.bytes_deleted)).toBeLessThanOrEqual(0.05 * pruned.result.bytes_deleted);
    expect(pruned.result.bytes_remaining).toBe(after);

    const checked = await maintenance('/api/v1/check', { read_data: true });
    expect(checked).toMatchObject({ kind: 'check', status: 'completed', error: null, result: { ok: true, backups_checked: 1, problems: { count: 0 }, affected: [] } });
    expect(checked.result.bytes_read).toBeGreaterThan(2 * MiB);

    const target = join(h.root, 'restored-b');
    const restored = await h.request('/api/v1/restore', { method: 'POST', token, json: { backup_id: backupB.id, target_path: target }, headers: wait });
    expect(restored.body.data.status).toBe('completed');
    expect(files(target)).toEqual(files(b));
  });

  it('a damaged pack: the check fails with CORRUPT_DATA and names the backups and paths that use it', async () => {
    const src = join(h.root, 'damaged');
    mkdirSync(src);
    writeFileSync(join(src, 'victim.bin'), randomBytes(3 * MiB));
    const packsBefore = new Set(readdirSync(join(repoDir, 'data'), { recursive: true }) as string[]);
    const victim = await backupOf(src);
    const copy = join(h.root, 'copy');
    mkdirSync(join(copy, 'sub'), { recursive: true });
    copyFileSync(join(src, 'victim.bin'), join(copy, 'sub', 'same.bin'));
    const sharing = await backupOf(copy);
    const added = (readdirSync(join(repoDir, 'data'), { recursive: true }) as string[]).filter((p) => /[0-9a-f]{64}$/.test(p) && !packsBefore.has(p));
    const pack = join(repoDir, 'data', added.sort((x, y) => statSync(join(repoDir, 'data', y)).size - statSync(join(repoDir, 'data', x)).size)[0]!);
    const fd = openSync(pack, 'r+');
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, MiB);
    byte[0]! ^= 0xff;
    writeSync(fd, byte, 0, 1, MiB);
    closeSync(fd);

    const checked = await maintenance('/api/v1/check', { read_data_subset: '100%' });
    expect(checked).toMatchObject({ status: 'failed', error: { code: 'CORRUPT_DATA' }, options: { read_data: false, read_data_subset: '100%' }, result: { ok: false } });
    const affected = [...checked.result.affected].sort((x: any, y: any) => x.backup_id.localeCompare(y.backup_id));
    expect(affected).toEqual(
      [
        { backup_id: victim.id, whole_backup: false, paths: ['victim.bin'], path_count: 1 },
        { backup_id: sharing.id, whole_backup: false, paths: ['sub/same.bin'], path_count: 1 },
      ].sort((x, y) => x.backup_id.localeCompare(y.backup_id)),
    );
    const again = await h.request(`/api/v1/maintenance/${checked.id}`, { token });
    expect(again.body.data).toEqual({ ...checked, duration_seconds: again.body.data.duration_seconds });
    // Gone from the repository once both backups are deleted and pruned: the next check passes.
    for (const id of [victim.id, sharing.id]) expect((await h.request(`/api/v1/backup/${id}`, { method: 'DELETE', token })).status).toBe(200);
    await maintenance('/api/v1/prune', {});
    expect((await maintenance('/api/v1/check', { read_data: true })).result.ok).toBe(true);
  });

  it('applies a retention policy: the dry run tells what goes and why, the real one deletes it', async () => {
    const src = join(h.root, 'kept');
    mkdirSync(src);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(src, `v${i}.txt`), `version ${i}\n`);
      ids.push((await backupOf(src)).id);
    }
    const bad = await h.request('/api/v1/retention', { method: 'POST', token, json: { source: src, dry_run: true } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'VALIDATION_ERROR', details: { errors: [{ path: '/body' }] } });

    const dry = await h.request('/api/v1/retention', { method: 'POST', token, json: { source: src, keep_last: 1, keep_daily: 1, dry_run: true } });
    expect(dry.status).toBe(200);
    expect(dry.body.data).toMatchObject({ dry_run: true, kept: 1, forgotten: 2 });
    expect(dry.body.data.groups).toHaveLength(1);
    expect(dry.body.data.groups[0].keep).toMatchObject([{ backup_id: ids[2], reasons: ['last', 'daily'] }]);
    expect(dry.body.data.groups[0].forget.map((f: any) => f.backup_id)).toEqual([ids[1], ids[0]]);
    expect((await h.request(`/api/v1/backup/${ids[0]}`, { token })).status).toBe(200);

    const real = await h.request('/api/v1/retention', { method: 'POST', token, json: { source: src, keep_last: 1 } });
    expect(real.body.data).toMatchObject({ dry_run: false, kept: 1, forgotten: 2 });
    expect((await h.request(`/api/v1/backup/${ids[0]}`, { token })).status).toBe(404);
    expect((await h.request(`/api/v1/backup/${ids[1]}`, { token })).status).toBe(404);
    expect((await h.request(`/api/v1/backup/${ids[2]}`, { token })).status).toBe(200);
  });

  it('a repository that cannot be used: usage and delete answer 422 DESTINATION_UNAVAILABLE, change nothing, and work once it is back', async () => {
    const src = join(h.root, 'unusable');
    mkdirSync(src);
    writeFileSync(join(src, 'f.txt'), 'kept\n');
    const kept = await backupOf(src);
    // The repository's directory becomes a file: every path in it fails with ENOTDIR.
    renameSync(repoDir, `${repoDir}.away`);
    writeFileSync(repoDir, 'not a directory');
    try {
      const usage = await h.request('/api/v1/usage', { token });
      expect(usage.status).toBe(422);
      expect(usage.body.error).toMatchObject({ code: 'DESTINATION_UNAVAILABLE', details: { destination: 'cloud' } });
      const refused = await h.request(`/api/v1/backup/${kept.id}`, { method: 'DELETE', token });
      expect(refused.status).toBe(422);
      expect(refused.body.error).toMatchObject({ code: 'DESTINATION_UNAVAILABLE', details: { destination: 'cloud' } });
    } finally {
      rmSync(repoDir);
      renameSync(`${repoDir}.away`, repoDir);
    }
    expect((await h.request(`/api/v1/backup/${kept.id}`, { token })).body.data.status).toBe('completed');
    expect((await h.request('/api/v1/usage', { token })).status).toBe(200);
    expect((await h.request(`/api/v1/backup/${kept.id}`, { method: 'DELETE', token })).status).toBe(200);
  });

  it('refuses to delete an unfinished backup, a second maintenance job of a repository, and other accounts\' jobs', async () => {
    const big = join(h.root, 'big');
    mkdirSync(big);
    for (let i = 0; i < 6; i++) writeFileSync(join(big, `f${i}.bin`), randomBytes(8 * MiB));
    const started = await h.request('/api/v1/backup', { method: 'POST', token, json: { source: big } });
    const refused = await h.request(`/api/v1/backup/${started.body.data.id}`, { method: 'DELETE', token });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('JOB_NOT_FINISHED');
    expect(['queued', 'running']).toContain(refused.body.error.details.status);

    const first = await h.request('/api/v1/check', { method: 'POST', token, json: { read_data: true } });
    expect(first.status).toBe(202);
    const second = await h.request('/api/v1/prune', { method: 'POST', token, json: {} });
    expect(second.status).toBe(409);
    expect(second.body.error).toMatchObject({ code: 'MAINTENANCE_RUNNING', details: { job_id: first.body.data.id, destination: 'cloud' } });

    const other = await h.tokenFor(await h.newKey('pro'));
    expect((await h.request(`/api/v1/maintenance/${first.body.data.id}`, { token: other })).body.error).toMatchObject({ code: 'MAINTENANCE_NOT_FOUND', details: { job_id: first.body.data.id } });
    expect((await h.request('/api/v1/maintenance/mnt_nope', { token })).status).toBe(400);
    expect((await h.request('/api/v1/prune', { method: 'POST', token, json: { destination: 'offsite' } })).body.error.code).toBe('DESTINATION_UNAVAILABLE');
    // Both finish: the check ran beside the backup.
    const settled = async (id: string, path: string): Promise<any> => {
      for (;;) {
        const r = await h.request(`${path}/${id}`, { token });
        if (['completed', 'failed', 'cancelled'].includes(r.body.data.status)) return r.body.data;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    expect((await settled(first.body.data.id, '/api/v1/maintenance')).status).toBe('completed');
    expect((await settled(started.body.data.id, '/api/v1/backup')).status).toBe('completed');
  }, 60_000);
});

import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENERATED_DIR, loadDocument } from '../http/openapi.ts';
import { startHarness, type Harness } from '../testing/harness.ts';

/** Every file under dir (relative path → bytes), symlinks as their target. */
function snapshotTree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = lstatSync(p);
      const rel = relative(dir, p);
      if (st.isSymbolicLink()) out.set(rel, `-> ${readlinkSync(p)}`);
      else if (st.isDirectory()) {
        out.set(rel + '/', `dir ${(st.mode & 0o777).toString(8)}`);
        walk(p);
      } else out.set(rel, `${(st.mode & 0o777).toString(8)} ${readFileSync(p).toString('base64')}`);
    }
  };
  walk(dir);
  return out;
}

describe('Backup API over real HTTP with real files', () => {
  let h: Harness;
  let token: string;
  let accountId: string;
  let docs: string;

  beforeAll(async () => {
    h = await startHarness();
    const key = await h.newKey('business');
    accountId = key.accountId;
    token = await h.tokenFor(key);
    docs = join(h.root, 'documents');
    mkdirSync(join(docs, 'reports', '2024'), { recursive: true });
    writeFileSync(join(docs, 'notes.txt'), 'meeting notes\n');
    writeFileSync(join(docs, 'reports', '2024', 'q1.bin'), randomBytes(3 * 1024 * 1024 + 17));
    writeFileSync(join(docs, 'reports', 'summary.md'), '# Summary\n'.repeat(1000), { mode: 0o600 });
    writeFileSync(join(docs, 'empty'), '');
    symlinkSync('notes.txt', join(docs, 'latest'));
  });
  afterAll(() => h.cleanup());

  it("runs the specification's own example request and restores byte-identical files", async () => {
    const doc = loadDocument(GENERATED_DIR, 'backup') as any;
    const example = structuredClone(doc.components.examples['create-backup-request'].value);
    expect(example).toMatchObject({ destination: 'cloud', options: { compression: 'zstd', encryption: true, deduplication: true } });
    example.source = docs; // the example's /home/user/documents, here inside the test's allowed root

    const created = await h.request('/api/v1/backup', { method: 'POST', token, json: example, headers: { Prefer: 'wait=30' } });
    expect(created.status).toBe(202);
    expect(created.headers.get('preference-applied')).toBe('wait=30');
    const job = created.body.data;
    expect(created.headers.get('location')).toBe(`/api/v1/backup/${job.id}`);
    expect(job).toMatchObject({ status: 'completed', source: docs, destination: 'cloud', files_backed_up: 5, error: null, warnings: { count: 0, items: [] } }); // 4 regular files and a symlink
    expect(job.size_bytes).toBe(3 * 1024 * 1024 + 17 + 14 + 10_000);
    expect(job.stored_bytes).toBeGreaterThan(3 * 1024 * 1024);
    expect(job.progress).toMatchObject({ files_done: 4, files_total: 4 });

    const got = await h.request(`/api/v1/backup/${job.id}`, { token });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual({ ...job, duration_seconds: got.body.data.duration_seconds });

    const target = join(h.root, 'restored');
    const restore = await h.request('/api/v1/restore', { method: 'POST', token, json: { backup_id: job.id, target_path: target }, headers: { Prefer: 'wait=30' } });
    expect(restore.status).toBe(202);
    expect(restore.headers.get('location')).toBe(`/api/v1/restore/${restore.body.data.id}`);
    expect(restore.body.data).toMatchObject({ status: 'completed', backup_id: job.id, target_path: target, overwrite: 'never', paths: null, files_restored: 5, files_skipped: 0, warnings: { count: 0, items: [] } });
    expect(snapshotTree(target)).toEqual(snapshotTree(docs));
    expect(statSync(join(target, 'reports', 'summary.md')).mode & 0o777).toBe(0o600);

    const again = await h.request('/api/v1/restore', { method: 'POST', token, json: { backup_id: job.id, target_path: target }, headers: { Prefer: 'wait=30' } });
    expect(again.body.data).toMatchObject({ status: 'completed', files_restored: 0, files_skipped: 5 });
    const always = await h.request('/api/v1/restore', { method: 'POST', token, json: { backup_id: job.id, target_path: target, overwrite: 'always' }, headers: { Prefer: 'wait=30' } });
    expect(always.body.data).toMatchObject({ status: 'completed', files_restored: 5, files_skipped: 0 });
    expect(snapshotTree(target)).toEqual(snapshotTree(docs));
    const read = await h.request(`/api/v1/restore/${again.body.data.id}`, { token });
    expect(read.body.data.id).toBe(again.body.data.id);

    const subset = await h.request('/api/v1/restore', {
      method: 'POST', token, headers: { Prefer: 'wait=30' },
      json: { backup_id: job.id, target_path: join(h.root, 'subset'), paths: ['reports/2024'], overwrite: 'always' },
    });
    expect(subset.body.data).toMatchObject({ status: 'completed', files_restored: 1, paths: ['reports/2024'] }); // the directory's one file
    expect(readFileSync(join(h.root, 'subset', 'reports', '2024', 'q1.bin')).equals(readFileSync(join(docs, 'reports', '2024', 'q1.bin')))).toBe(true);
  });

  it('honours every option combination and the local destination', async () => {
    for (const options of [
      { compression: 'gzip', encryption: false, deduplication: true },
      { compression: 'none', encryption: true, deduplication: false },
    ]) {
      const created = await h.request('/api/v1/backup', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { source: join(docs, 'reports'), destination: 'local', options } });
      expect(created.body.data).toMatchObject({ status: 'completed', destination: 'local', options, files_backed_up: 2 }); // summary.md and 2024/q1.bin
      const target = join(h.root, `restored-${options.compression}`);
      const restored = await h.request('/api/v1/restore', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { backup_id: created.body.data.id, target_path: target } });
      expect(restored.body.data.status).toBe('completed');
      expect(snapshotTree(target)).toEqual(snapshotTree(join(docs, 'reports')));
    }
  });

  it('answers 202 at once without Prefer, and the job completes', async () => {
    const res = await h.request('/api/v1/backup', { method: 'POST', token, json: { source: join(docs, 'notes.txt') } });
    expect(res.status).toBe(202);
    expect(res.headers.get('preference-applied')).toBeNull();
    expect(res.body.data.options).toEqual({ compression: 'zstd', encryption: true, deduplication: true });
    expect(res.body.data.destination).toBe('cloud');
    expect(['queued', 'running', 'completed']).toContain(res.body.data.status);
    let status = res.body.data.status;
    for (let i = 0; i < 100 && status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      status = (await h.request(`/api/v1/backup/${res.body.data.id}`, { token })).body.data.status;
    }
    expect(status).toBe('completed');
  });

  it('lists files by byte order in pages with opaque cursors, filtered by prefix', async () => {
    const newest = await h.request('/api/v1/files', { token });
    expect(newest.status).toBe(200);
    expect(newest.body.data.items.map((f: any) => f.path)).toEqual(['notes.txt']);
    const listed = await h.request('/api/v1/backup?status=completed&limit=100', { token });
    const [full] = listed.body.data.items.filter((j: any) => j.source === docs);
    const all = await h.request(`/api/v1/files?backup_id=${full.id}`, { token });
    expect(all.body.data.items.map((f: any) => f.path)).toEqual(['empty', 'latest', 'notes.txt', 'reports', 'reports/2024', 'reports/2024/q1.bin', 'reports/summary.md']);
    const link = all.body.data.items.find((f: any) => f.path === 'latest');
    expect(link).toMatchObject({ type: 'symlink', link_target: 'notes.txt', sha256: null });
    const file = all.body.data.items.find((f: any) => f.path === 'reports/summary.md');
    expect(file).toMatchObject({ type: 'file', mode: '0600', size_bytes: 10_000 });
    expect(file.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(all.body.data.next_cursor).toBeNull();

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `/api/v1/files?backup_id=${full.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await h.request(q, { token });
      expect(page.status).toBe(200);
      expect(page.body.data.items.length).toBe(page.body.data.next_cursor ? 2 : page.body.data.items.length);
      expect(page.body.data.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.items.map((f: any) => f.path));
      cursor = page.body.data.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all.body.data.items.map((f: any) => f.path));

    const prefixed = await h.request(`/api/v1/files?backup_id=${full.id}&prefix=${encodeURIComponent('reports/')}&limit=1`, { token });
    expect(prefixed.body.data.items.map((f: any) => f.path)).toEqual(['reports/2024']);
    const unencoded = await h.request(`/api/v1/files?backup_id=${full.id}&prefix=reports/&limit=1`, { token });
    expect(unencoded.body.data).toEqual(prefixed.body.data);
    const foreignCursor = await h.request(`/api/v1/files?backup_id=${full.id}&cursor=${prefixed.body.data.next_cursor}`, { token });
    expect(foreignCursor.status).toBe(400);
    expect(foreignCursor.body.error.details.errors[0].path).toBe('/query/cursor');
  });

  it('pages backups newest first', async () => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await h.request(`/api/v1/backup?limit=1${cursor ? `&cursor=${cursor}` : ''}`, { token });
      expect(page.body.data.items).toHaveLength(1);
      ids.push(...page.body.data.items.map((j: any) => j.id));
      cursor = page.body.data.next_cursor;
    } while (cursor);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    expect([...ids].sort().reverse()).toEqual(ids);
    const bad = await h.request('/api/v1/backup?cursor=AAAAAAAAAAAbkp_x', { token });
    expect(bad.status).toBe(400);
  });

  it('confines sources and targets to the allowed roots after resolving .. and symlinks', async () => {
    const outside = join(h.dir, 'outside');
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'secret.txt'), 'x');
    symlinkSync(outside, join(h.root, 'escape'));
    const attempt = (source: string) => h.request('/api/v1/backup', { method: 'POST', token, json: { source } });

    const refusals = await Promise.all([
      attempt(`${h.root}/../outside`),
      attempt(`${h.root}/documents/../../outside/secret.txt`),
      attempt(join(h.root, 'escape')),
      attempt(join(h.root, 'escape', 'secret.txt')),
      attempt(join(outside, 'does-not-exist')),
      attempt('/etc/passwd'),
      attempt(h.dataDir),
      attempt(join(h.dataDir, 'secrets')),
    ]);
    for (const r of refusals) {
      expect(r.status).toBe(403);
      expect(r.body.error).toEqual({ code: 'SOURCE_NOT_ALLOWED', message: refusals[0]!.body.error.message, details: {} });
    }
    const missing = await attempt(join(h.root, 'documents', 'nope'));
    expect(missing.status).toBe(422);
    expect(missing.body.error).toMatchObject({ code: 'INVALID_SOURCE', details: { path: join(h.root, 'documents', 'nope') } });

    const unknownDestination = await h.request('/api/v1/backup', { method: 'POST', token, json: { source: docs, destination: 'tape' } });
    expect(unknownDestination.status).toBe(422);
    expect(unknownDestination.body.error).toMatchObject({ code: 'DESTINATION_UNAVAILABLE', details: { destination: 'tape' } });

    const [done] = (await h.request('/api/v1/backup?status=completed&limit=1', { token })).body.data.items;
    const restoreTo = (target_path: string, extra: object = {}) => h.request('/api/v1/restore', { method: 'POST', token, json: { backup_id: done.id, target_path, ...extra } });
    for (const target of [join(h.root, 'escape', 'r'), `${h.root}/../outside/r`, '/tmp', join(h.dataDir, 'restore-here')]) {
      const r = await restoreTo(target);
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('TARGET_NOT_ALLOWED');
    }
    const onFile = await restoreTo(join(docs, 'notes.txt'));
    expect(onFile.status).toBe(422);
    expect(onFile.body.error).toMatchObject({ code: 'INVALID_TARGET', details: { path: join(docs, 'notes.txt') } });
    const notInBackup = await restoreTo(join(h.root, 'r2'), { paths: ['no/such/file'] });
    expect(notInBackup.status).toBe(422);
    expect(notInBackup.body.error).toMatchObject({ code: 'INVALID_SOURCE', details: { path: 'no/such/file' } });
    const dotdot = await restoreTo(join(h.root, 'r3'), { paths: ['../etc'] });
    expect(dotdot.status).toBe(400);
  });

  it("refuses the service's own data directory even inside an allowed root", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'own-data-')));
    const own = await startHarness({ BACKUP_ALLOWED_ROOTS: dir }, {}, dir);
    try {
      const t = await own.tokenFor(await own.newKey());
      for (const source of [own.dataDir, join(own.dataDir, 'secrets'), dir]) {
        const res = await own.request('/api/v1/backup', { method: 'POST', token: t, json: { source } });
        expect(res.status, source).toBe(403);
        expect(res.body.error.code).toBe('SOURCE_NOT_ALLOWED');
      }
      expect((await own.request('/api/v1/backup', { method: 'POST', token: t, json: { source: own.root } })).status).toBe(202);
    } finally {
      await own.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never restores through a symlink that sits in the target above a requested path', async () => {
    const src = join(h.root, 'trap-src');
    mkdirSync(join(src, 'a'), { recursive: true });
    writeFileSync(join(src, 'a', 'victim.txt'), 'from the backup');
    const backup = (await h.request('/api/v1/backup', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { source: src } })).body.data;
    expect(backup.status).toBe('completed');
    const outside = join(h.dir, 'outside-victim');
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'victim.txt'), 'original');
    const target = join(h.root, 'trap-target');
    mkdirSync(target);
    symlinkSync(outside, join(target, 'a'));

    const res = await h.request('/api/v1/restore', { method: 'POST', token, json: { backup_id: backup.id, target_path: target, paths: ['a/victim.txt'], overwrite: 'always' } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'INVALID_TARGET', details: { path: `${target}/a` } });

    // The same restore slipped past the request check (the symlink appears later) fails when it runs.
    const store = h.service.services.store;
    const id = 'rst_01ARZ3NDEKTSV4RRFFQ69G5FAZ';
    const { queue } = h.service.services;
    await queue.submitRestore({ id, accountId, repository: `${accountId}/cloud`, backupId: backup.id, targetPath: target, paths: ['a/victim.txt'], overwrite: 'always' });
    await queue.waitSettled(id, 30_000);
    expect(await store.jobs.getRestore(id)).toMatchObject({ status: 'failed', error: { code: 'INVALID_TARGET' } });
    // A whole restore meets the symlink as the engine creates directory a: refused as well.
    const whole = await h.request('/api/v1/restore', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { backup_id: backup.id, target_path: target, overwrite: 'always' } });
    expect(whole.body.data.status).toBe('failed');
    expect(readFileSync(join(outside, 'victim.txt'), 'utf8')).toBe('original');
  });

  it('reports missing backups and restores, and refuses work on backups that did not complete', async () => {
    const missingId = 'bkp_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    expect((await h.request(`/api/v1/backup/${missingId}`, { token })).body.error.code).toBe('BACKUP_NOT_FOUND');
    expect((await h.request(`/api/v1/backup/${missingId}/cancel`, { method: 'POST', token })).body.error.code).toBe('BACKUP_NOT_FOUND');
    expect((await h.request('/api/v1/restore/rst_01ARZ3NDEKTSV4RRFFQ69G5FAV', { token })).body.error.code).toBe('RESTORE_NOT_FOUND');
    expect((await h.request(`/api/v1/files?backup_id=${missingId}`, { token })).status).toBe(404);
    const restoreMissing = await h.request('/api/v1/restore', { method: 'POST', token, json: { backup_id: missingId, target_path: join(h.root, 'x') } });
    expect(restoreMissing.status).toBe(404);
    expect(restoreMissing.body.error.code).toBe('BACKUP_NOT_FOUND');

    // A failed backup (as the runner records one) cannot be listed, restored or cancelled.
    const failedId = 'bkp_01ARZ3NDEKTSV4RRFFQ69G5FAW';
    const { queue } = h.service.services;
    const failed = { id: failedId, accountId, repository: `${accountId}/cloud`, source: join(h.root, 'gone'), destination: 'cloud', compression: 'zstd', encryption: true, deduplication: true } as const;
    await queue.submitBackup(failed); // the source is gone by the time it runs
    await queue.waitSettled(failedId, 30_000);
    const files = await h.request(`/api/v1/files?backup_id=${failedId}`, { token });
    expect(files.status).toBe(409);
    expect(files.body.error).toMatchObject({ code: 'BACKUP_NOT_COMPLETED', details: { status: 'failed' } });
    const restore = await h.request('/api/v1/restore', { method: 'POST', token, json: { backup_id: failedId, target_path: join(h.root, 'x') } });
    expect(restore.status).toBe(409);
    expect(restore.body.error).toMatchObject({ code: 'BACKUP_NOT_COMPLETED', details: { status: 'failed' } });
    const cancel = await h.request(`/api/v1/backup/${failedId}/cancel`, { method: 'POST', token });
    expect(cancel.status).toBe(409);
    expect(cancel.body.error).toMatchObject({ code: 'JOB_FINISHED', details: { status: 'failed' } });
    expect((await h.request(`/api/v1/backup/${failedId}`, { token })).body.data.error).toMatchObject({ code: 'INVALID_SOURCE' });
  });

  it('answers 404 BACKUP_NOT_FOUND on /files for an account without a completed backup', async () => {
    const other = await h.tokenFor(await h.newKey());
    const res = await h.request('/api/v1/files', { token: other });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('BACKUP_NOT_FOUND');
  });

  it('shows another account the same 404 as a missing id, everywhere', async () => {
    const [mine] = (await h.request('/api/v1/backup?status=completed&limit=1', { token })).body.data.items;
    const myRestore = (await h.request('/api/v1/restore', { method: 'POST', token, json: { backup_id: mine.id, target_path: join(h.root, 'iso') } })).body.data;
    const intruder = await h.tokenFor(await h.newKey());
    // The answers differ only in the id they echo (details names the id the request sent).
    const strip = (b: any, id: string) => JSON.parse(JSON.stringify({ ...b, meta: undefined }).replaceAll(id, 'ID'));
    const idIn = (path: string) => /(?:bkp|rst)_[0-9A-Z]{26}/.exec(path)![0];
    const pairs: Array<[string, string, RequestInit?]> = [
      [`/api/v1/backup/${mine.id}`, '/api/v1/backup/bkp_01ARZ3NDEKTSV4RRFFQ69G5FAX'],
      [`/api/v1/files?backup_id=${mine.id}`, '/api/v1/files?backup_id=bkp_01ARZ3NDEKTSV4RRFFQ69G5FAX'],
      [`/api/v1/restore/${myRestore.id}`, '/api/v1/restore/rst_01ARZ3NDEKTSV4RRFFQ69G5FAX'],
    ];
    for (const [theirs, missing] of pairs) {
      const a = await h.request(theirs, { token: intruder });
      const b = await h.request(missing, { token: intruder });
      expect(a.status).toBe(404);
      expect(strip(a.body, idIn(theirs))).toEqual(strip(b.body, idIn(missing)));
    }
    const cancel = await h.request(`/api/v1/backup/${mine.id}/cancel`, { method: 'POST', token: intruder });
    expect(cancel.status).toBe(404);
    const restore = await h.request('/api/v1/restore', { method: 'POST', token: intruder, json: { backup_id: mine.id, target_path: join(h.root, 'steal') } });
    expect(restore.status).toBe(404);
    expect((await h.request('/api/v1/backup', { token: intruder })).body.data.items).toEqual([]);
  });

  it('cancels a queued backup at once and a running one through the worker', async () => {
    const big = join(h.root, 'big');
    mkdirSync(big);
    for (let i = 0; i < 4; i++) writeFileSync(join(big, `f${i}`), randomBytes(16 * 1024 * 1024));
    const first = (await h.request('/api/v1/backup', { method: 'POST', token, json: { source: big, options: { deduplication: false } } })).body.data;
    // Same account and destination: the second waits for the first (one job per repository).
    const second = (await h.request('/api/v1/backup', { method: 'POST', token, json: { source: big } })).body.data;
    const c2 = await h.request(`/api/v1/backup/${second.id}/cancel`, { method: 'POST', token });
    expect(c2.status).toBe(202);
    expect(c2.body.data).toMatchObject({ id: second.id, status: 'cancelled' });
    const c1 = await h.request(`/api/v1/backup/${first.id}/cancel`, { method: 'POST', token });
    expect(c1.status).toBe(202);
    expect(['queued', 'running', 'cancelled']).toContain(c1.body.data.status);
    await h.service.services.queue.waitSettled(first.id, 30_000);
    const after = await h.request(`/api/v1/backup/${first.id}`, { token });
    expect(after.body.data.status).toBe('cancelled');
    expect(after.body.data.finished_at).not.toBeNull();
    expect((await h.request(`/api/v1/backup/${first.id}/cancel`, { method: 'POST', token })).body.error.code).toBe('JOB_FINISHED');
  });

  it("answers 429 QUEUE_FULL with Retry-After once the account has the queue limit's jobs queued", async () => {
    const small = await startHarness({ JOB_QUEUE_LIMIT: '2', JOB_CONCURRENCY: '1' });
    try {
      const t = await small.tokenFor(await small.newKey('business'));
      const src = join(small.root, 'src');
      mkdirSync(src);
      writeFileSync(join(src, 'f'), randomBytes(4 * 1024 * 1024));
      // One repository runs one job at a time: of five, one may run and two wait; the others are refused.
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => small.request('/api/v1/backup', { method: 'POST', token: t, json: { source: src, options: { deduplication: false } } })),
      );
      const refused = answers.filter((a) => a.status === 429);
      expect(answers.filter((a) => a.status === 202).length).toBeLessThanOrEqual(3);
      expect(refused.length).toBeGreaterThanOrEqual(2);
      for (const r of refused) {
        expect(r.body.error).toMatchObject({ code: 'QUEUE_FULL', details: { queue_limit: 2 } });
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      const other = await small.tokenFor(await small.newKey('business'));
      expect((await small.request('/api/v1/backup', { method: 'POST', token: other, json: { source: src } })).status).toBe(202);
    } finally {
      await small.cleanup();
    }
  });
});

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, statfsSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './testing/harness.ts';

const SIZE_MIB = 48;

/** A small tmpfs of its own: a real filesystem that really fills up (needs root, as the suite runs). */
function mountSmallFilesystem(dir: string): void {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${SIZE_MIB}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    throw new Error(`The disk-full tests mount a ${SIZE_MIB} MiB tmpfs and need root (or CAP_SYS_ADMIN) for it: ${(err as Error).message}`);
  }
}

/** Writes `file` until the filesystem has `leaveBytes` left (0: until it refuses with ENOSPC). */
function fill(file: string, leaveBytes = 0): void {
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(256 * 1024, 1);
  try {
    for (;;) {
      const s = statfsSync(file);
      const room = s.bavail * s.bsize - leaveBytes;
      if (leaveBytes > 0 && room <= 0) break;
      writeSync(fd, chunk, 0, leaveBytes > 0 ? Math.min(chunk.length, room) : chunk.length);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
}

describe('a full disk where the data lives', () => {
  let dir: string;
  let mount: string;
  let h: Harness;
  let token: string;
  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'disk-full-')));
    mount = join(dir, 'fs');
    mkdirSync(mount);
    mountSmallFilesystem(mount);
    h = await startHarness({ DATA_DIR: join(mount, 'data'), BACKUP_ALLOWED_ROOTS: join(dir, 'root'), RATE_LIMITS: 'off' }, {}, dir);
    token = await h.tokenFor(await h.newKey('pro'));
  });
  afterAll(async () => {
    await h?.stop();
    if (mount) execFileSync('umount', [mount]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('turns /status degraded below 5 % free, reporting the free bytes, and ok again once space is freed', async () => {
    const ok = await h.request('/api/v1/status');
    expect(ok.body.data.status).toBe('ok');
    expect(ok.body.data.checks.storage.free_bytes).toBeGreaterThan(40 * 1024 * 1024);
    const filler = join(mount, 'filler');
    fill(filler, 1024 * 1024); // leaves about 1 MiB: under 5 % of 48 MiB
    const low = await h.request('/api/v1/status');
    expect(low.status).toBe(200);
    expect(low.body.data).toMatchObject({ status: 'degraded', checks: { database: { status: 'ok' }, storage: { status: 'failed' } } });
    expect(low.body.data.checks.storage.free_bytes).toBeLessThan(2.4 * 1024 * 1024);
    rmSync(filler);
    expect((await h.request('/api/v1/status')).body.data.status).toBe('ok');
  });

  it('answers a write that meets the full disk 507 STORAGE_FULL, keeps nothing of it, and works once space is freed', async () => {
    const filler = join(mount, 'filler');
    fill(filler);
    let full: { status: number; body: any } | undefined;
    // The WAL may have room left from before (SQLite reuses it after a checkpoint): write until it needs more.
    for (let i = 0; i < 3000 && !full; i++) {
      const res = await h.request('/api/contacts/general', { method: 'POST', json: { name: 'N', email: 'n@example.com', subject: `s${i}`, message: 'x'.repeat(10_000) } });
      expect([201, 507]).toContain(res.status);
      if (res.status === 507) full = res;
    }
    expect(full?.body.error).toMatchObject({ code: 'STORAGE_FULL', details: {} });
    const before = await h.service.services.store.contacts.count();
    rmSync(filler);
    const res = await h.request('/api/contacts/general', { method: 'POST', json: { name: 'N', email: 'n@example.com', subject: 'after', message: 'm' } });
    expect(res.status).toBe(201);
    expect(await h.service.services.store.contacts.count()).toBe(before + 1);
  });

  it('fails a backup that meets the full disk with STORAGE_FULL; the next one after space is freed works and restores', async () => {
    const src = join(h.root, 'src');
    mkdirSync(src, { recursive: true });
    writeFileSync(join(src, 'big.bin'), randomBytes(8 * 1024 * 1024));
    const filler = join(mount, 'filler');
    fill(filler, 2 * 1024 * 1024);
    const failed = await h.request('/api/v1/backup', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { source: src, options: { compression: 'none' } } });
    expect(failed.body.data).toMatchObject({ status: 'failed', error: { code: 'STORAGE_FULL' } });
    rmSync(filler);
    const done = await h.request('/api/v1/backup', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { source: src, options: { compression: 'none' } } });
    expect(done.body.data.status).toBe('completed');
    const restored = await h.request('/api/v1/restore', { method: 'POST', token, headers: { Prefer: 'wait=30' }, json: { backup_id: done.body.data.id, target_path: join(h.root, 'back') } });
    expect(restored.body.data.status).toBe('completed');
    expect(readFileSync(join(h.root, 'back', 'big.bin')).equals(readFileSync(join(src, 'big.bin')))).toBe(true);
  });
});

import { execFileSync, spawn } from 'node:child_process';
import { chmod, chown, mkdir, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { backup, listEntries, masterKeyToBytes, newMasterKey } from './index.ts';
import type { Repository } from './index.ts';
import { tempDir } from './testing/fixtures.ts';
import { b, openTestRepo, t } from './testing/repo.ts';

/** Nothing is skipped in silence: what cannot be backed up is a warning, and nothing blocks on a FIFO. */
let dir: string;
let cleanup: () => Promise<void>;
let repo: Repository;
let src: string;
const opts = { compression: 'zstd', encryption: true, deduplication: true } as const;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-special-'));
  ({ repo } = await openTestRepo(dir));
  src = join(dir, 'src');
  await mkdir(src);
  await writeFile(join(src, 'plain.txt'), 'plain\n');
});
afterEach(async () => {
  await repo.close();
  await cleanup();
});

async function listed(snapshotId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of listEntries(repo, snapshotId)) out.push(t(e.path));
  return out;
}

it('reports a FIFO, a socket and a device as warnings with a count, and backs up the rest', async () => {
  execFileSync('mkfifo', [join(src, 'fifo')]);
  execFileSync('mknod', [join(src, 'null-device'), 'c', '1', '3']);
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(join(src, 'socket'), resolve));
  try {
    const result = await backup(repo, { source: src, ...opts });
    expect(result.warnings.count).toBe(3);
    expect(result.warnings.items.map((w) => [t(w.path), w.reason])).toEqual([
      ['fifo', 'a FIFO: not backed up'],
      ['null-device', 'a character device: not backed up'],
      ['socket', 'a socket: not backed up'],
    ]);
    expect(result.files).toBe(1);
    expect(await listed(result.snapshotId)).toEqual(['plain.txt']);
  } finally {
    server.close();
  }
});

for (const size of [100, 600 * 1024]) {
  it(`completes with a warning, without blocking, when a ${size > 1000 ? 'large' : 'small'} file is swapped for a FIFO mid-backup`, async () => {
    await writeFile(join(src, 'data.bin'), Buffer.alloc(size, 7));
    const started = Date.now();
    const result = await backup(repo, {
      source: src,
      ...opts,
      beforeOpen: async (path) => {
        if (t(path) === 'data.bin') {
          await unlink(join(src, 'data.bin'));
          execFileSync('mkfifo', [join(src, 'data.bin')]); // nobody ever writes to it
        }
      },
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(result.warnings).toEqual({ count: 1, items: [{ path: b('data.bin'), reason: 'replaced during the backup (now a FIFO): not read' }] });
    expect(await listed(result.snapshotId)).toEqual(['plain.txt']);
  });
}

it('reports an unreadable file and an unreadable directory as warnings (backup as an unprivileged user)', async () => {
  // Root reads anything, so the backup runs in a child process as nobody.
  await chmod(dir, 0o755);
  await writeFile(join(src, 'secret.txt'), 'secret');
  await chmod(join(src, 'secret.txt'), 0o000);
  await mkdir(join(src, 'locked'));
  await writeFile(join(src, 'locked', 'inside.txt'), 'inside');
  await chmod(join(src, 'locked'), 0o000);
  const repoDir = join(dir, 'nobody-repo');
  await mkdir(repoDir);
  await chown(repoDir, 65534, 65534);
  const keyHex = masterKeyToBytes(newMasterKey()).toString('hex');
  const child = spawn(process.execPath, [join(import.meta.dirname, 'testing/backup-child.ts'), repoDir, 'backup', src], {
    env: { ...process.env, ENGINE_KEY: keyHex },
    uid: 65534,
    gid: 65534,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  expect(code, err).toBe(0);
  const done = JSON.parse(out.trim().split('\n').at(-1)!) as { done: { files: number; warnings: { count: number; items: { path: string; reason: string }[] } } };
  const items = done.done.warnings.items.map((w) => [Buffer.from(w.path, 'hex').toString(), w.reason]);
  expect(done.done.warnings.count).toBe(2);
  expect(items).toEqual([
    ['locked', 'permission denied'],
    ['secret.txt', 'permission denied'],
  ]);
  expect(done.done.files).toBe(1);
});

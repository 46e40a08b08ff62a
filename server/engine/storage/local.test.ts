import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { listAll } from './backend.ts';
import { ObjectNotFoundError, StorageUnavailableError } from './errors.ts';
import { LocalBackend } from './local.ts';
import { backendSuite } from './suite.ts';

async function open(): Promise<{ backend: LocalBackend; dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'local-backend-'));
  return { backend: new LocalBackend(join(dir, 'repo')), dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

const exec = promisify(execFile);

backendSuite('local', open);

it('creates files 0600 and directories 0700, and leaves no temp behind', async () => {
  const { backend, dir, cleanup } = await open();
  try {
    await backend.save('data/ab/x', [Buffer.from('x')]);
    await backend.save('data/ab/x', [Buffer.from('y')], { ifAbsent: true });
    expect((await stat(join(dir, 'repo', 'data', 'ab', 'x'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'repo', 'data', 'ab'))).mode & 0o777).toBe(0o700);
    expect(await readdir(join(dir, 'repo', 'data', 'ab'))).toEqual(['x']);
  } finally {
    await cleanup();
  }
});

/** Runs `fn` as an unprivileged user (root passes every permission check). */
async function unprivileged<T>(fn: () => Promise<T>): Promise<T> {
  if (process.getuid?.() !== 0) return fn();
  process.setegid!(65534);
  process.seteuid!(65534);
  try {
    return await fn();
  } finally {
    process.seteuid!(0);
    process.setegid!(0);
  }
}

describe('storage it cannot write to', () => {
  it('is unavailable, not a missing object, when permission to make a directory is denied', async () => {
    const { dir, cleanup } = await open();
    try {
      await chmod(dir, 0o755);
      await mkdir(join(dir, 'repo'), { mode: 0o555 }); // the repository root exists; nothing may be made in it
      const backend = new LocalBackend(join(dir, 'repo', 'acc', 'cloud'));
      const saved = await unprivileged(() => backend.save('data/ab/x', [Buffer.from('x')]).catch((err: unknown) => err));
      expect(saved).toBeInstanceOf(StorageUnavailableError);
      expect((saved as Error).message).toMatch(/EACCES/);
      await expect(backend.load('config')).rejects.toBeInstanceOf(ObjectNotFoundError); // reading what is not there is still not-found
    } finally {
      await cleanup();
    }
  });

  it('is unavailable, not a missing object, on a read-only filesystem', async () => {
    if (process.getuid?.() !== 0) throw new Error('this test mounts a read-only tmpfs: run the suite as root (as CI does)');
    const { dir, cleanup } = await open();
    const mountPoint = join(dir, 'ro');
    await mkdir(mountPoint);
    await exec('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', mountPoint]);
    try {
      const backend = new LocalBackend(join(mountPoint, 'acc', 'cloud'));
      const saved = await backend.save('data/ab/x', [Buffer.from('x')]).catch((err: unknown) => err);
      expect(saved).toBeInstanceOf(StorageUnavailableError);
      expect((saved as Error).message).toMatch(/EROFS/);
      await expect(backend.save('config', [Buffer.from('x')], { ifAbsent: true })).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(backend.load('config')).rejects.toBeInstanceOf(ObjectNotFoundError);
      expect(await listAll(backend, '')).toEqual([]);
    } finally {
      await exec('umount', [mountPoint]);
      await cleanup();
    }
  });
});

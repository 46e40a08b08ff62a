import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { listAll } from './backend.ts';
import { ObjectNotFoundError, StorageFullError, StorageUnavailableError } from './errors.ts';
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

describe('an object written piece by piece', () => {
  const temps = async (dir: string): Promise<string[]> => (await readdir(dir, { recursive: true })).filter((f) => f.includes('.tmp-'));

  it('goes to a temp file as it comes (each write resolves once on disk), and is renamed into place at the commit', async () => {
    const { backend, dir, cleanup } = await open();
    try {
      const o = backend.create();
      const first = randomBytes(300_000);
      await o.write(first); // resolves before any commit: the bytes are written out, not held
      await o.write(Buffer.from('tail'));
      const [temp] = await temps(join(dir, 'repo'));
      expect((await stat(join(dir, 'repo', temp!))).size).toBe(300_004);
      expect((await stat(join(dir, 'repo', temp!))).mode & 0o777).toBe(0o600);
      expect(await listAll(backend, '')).toEqual([]);
      await o.commit('data/cd/pack');
      expect(await temps(join(dir, 'repo'))).toEqual([]);
      expect(Buffer.from(await backend.load('data/cd/pack')).equals(Buffer.concat([first, Buffer.from('tail')]))).toBe(true);
      expect((await stat(join(dir, 'repo', 'data', 'cd', 'pack'))).mode & 0o777).toBe(0o600);
      expect((await stat(join(dir, 'repo', 'data', 'cd'))).mode & 0o777).toBe(0o700);
    } finally {
      await cleanup();
    }
  });

  it('removes its temp file on abort; one left by a process that died is never listed and goes with removeUnfinished', async () => {
    const { backend, dir, cleanup } = await open();
    try {
      const aborted = backend.create();
      await aborted.write(randomBytes(1000));
      await aborted.abort();
      expect(await temps(join(dir, 'repo'))).toEqual([]);
      const left = backend.create(); // never committed nor aborted: what a killed backup leaves
      await left.write(randomBytes(5000));
      expect(await listAll(backend, '')).toEqual([]);
      expect(await backend.removeUnfinished(new Date(Date.now() - 60_000))).toEqual({ count: 0, bytes: 0 }); // newer than the cutoff: kept
      expect(await backend.removeUnfinished(new Date(Date.now() + 1000))).toEqual({ count: 1, bytes: 5000 });
      expect(await temps(join(dir, 'repo'))).toEqual([]);
    } finally {
      await cleanup();
    }
  });

  it('fails its commit on a full disk with StorageFullError and leaves no temp file', async () => {
    if (process.getuid?.() !== 0) throw new Error('this test mounts a small tmpfs: run the suite as root (as CI does)');
    const { dir, cleanup } = await open();
    const mountPoint = join(dir, 'small');
    await mkdir(mountPoint);
    await exec('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mountPoint]);
    try {
      const backend = new LocalBackend(join(mountPoint, 'repo'));
      const o = backend.create();
      for (let i = 0; i < 4; i++) await o.write(randomBytes(512 * 1024)); // each resolves: the failure is the commit's
      await expect(o.commit('data/ef/pack')).rejects.toBeInstanceOf(StorageFullError);
      await o.abort();
      expect(await temps(join(mountPoint, 'repo'))).toEqual([]);
      expect(await listAll(backend, '')).toEqual([]);
    } finally {
      await exec('umount', [mountPoint]);
      await cleanup();
    }
  });
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

import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Repository, backup, restore, verify } from './index.ts';
import type { MasterKey } from './index.ts';
import { bufferedObject, type Backend, type ObjectInfo, type ObjectWriter } from './storage/backend.ts';
import { LocalBackend } from './storage/local.ts';
import { allFiles, describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { openTestRepo } from './testing/repo.ts';

/**
 * A cancel is answered within 5 s whatever the job is blocked on: a storage that stopped
 * answering (a hung object store), or a receiver of the listing that does not return.
 */
let dir: string;
let cleanup: () => Promise<void>;
let key: MasterKey;
let src: string;
const MiB = 1024 * 1024;
const opts = { compression: 'none', encryption: true, deduplication: true } as const;

/** The local backend, except that once `hang` is set, pack saves and ranged reads (file data) never answer: a storage that stopped responding. */
class HangingBackend implements Backend {
  readonly inner: LocalBackend;
  readonly location: string;
  hang = false;
  reached: () => void = () => {};
  readonly blocked = new Promise<void>((resolve) => (this.reached = resolve));

  constructor(root: string) {
    this.inner = new LocalBackend(root);
    this.location = root;
  }
  private stall<T>(stalls: boolean, op: () => Promise<T>): Promise<T> {
    if (!this.hang || !stalls) return op();
    this.reached();
    return new Promise<T>(() => {});
  }
  save(name: string, parts: readonly Uint8Array[], options?: { ifAbsent?: boolean }): Promise<boolean> {
    return this.stall(name.startsWith('data/'), () => this.inner.save(name, parts, options));
  }
  /** Packs are saved whole, so their saves stall too. */
  create(): ObjectWriter {
    return bufferedObject((name, parts) => this.save(name, parts));
  }
  load(name: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    return this.stall(range !== undefined, () => this.inner.load(name, range));
  }
  stat(name: string): Promise<ObjectInfo> {
    return this.inner.stat(name);
  }
  list(prefix: string): AsyncIterable<ObjectInfo> {
    return this.inner.list(prefix);
  }
  remove(name: string): Promise<void> {
    return this.inner.remove(name);
  }
}

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir('engine-cancel-'));
  ({ key } = await openTestRepo(dir));
  src = join(dir, 'src');
  await mkdir(src);
  for (let i = 0; i < 3; i++) await writeRandomFile(join(src, `f${i}.bin`), 2 * MiB);
});
afterEach(async () => {
  await cleanup();
});

async function cancelledWithin(run: (signal: AbortSignal) => Promise<unknown>, blocked: Promise<void>): Promise<number> {
  const controller = new AbortController();
  const outcome = run(controller.signal).catch((err: unknown) => err);
  await blocked;
  await new Promise((resolve) => setTimeout(resolve, 200)); // settled into the wait
  const started = Date.now();
  controller.abort();
  expect(await outcome).toMatchObject({ code: 'CANCELLED' });
  return Date.now() - started;
}

it('cancels a backup blocked on a storage that stopped answering, leaving the repository consistent', async () => {
  const backend = new HangingBackend(join(dir, 'repo'));
  backend.hang = true;
  const repo = await Repository.open(backend, key);
  expect(await cancelledWithin((signal) => backup(repo, { source: src, ...opts, signal }), backend.blocked)).toBeLessThan(5000);

  const fresh = await Repository.open(new LocalBackend(join(dir, 'repo')), key);
  expect(await fresh.snapshots()).toEqual([]);
  expect((await verify(fresh)).errors).toEqual([]);
  const next = await backup(fresh, { source: src, ...opts });
  await restore(fresh, next.snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
  expect(await describeTree(join(dir, 'out'))).toEqual(await describeTree(src));
});

it('cancels a backup whose listing receiver does not return', async () => {
  await writeFile(join(src, 'small.txt'), 'small');
  const repo = await Repository.open(new LocalBackend(join(dir, 'repo')), key);
  let reached!: () => void;
  const blocked = new Promise<void>((resolve) => (reached = resolve));
  const elapsed = await cancelledWithin(
    (signal) =>
      backup(repo, {
        source: src,
        ...opts,
        signal,
        onEntries: () => {
          reached();
          return new Promise<void>(() => {});
        },
      }),
    blocked,
  );
  expect(elapsed).toBeLessThan(5000);
  expect(await repo.snapshots()).toEqual([]);
});

it('cancels a restore blocked on a storage that stopped answering, leaving no temp file', async () => {
  const backend = new HangingBackend(join(dir, 'repo'));
  const repo = await Repository.open(backend, key);
  const { snapshotId } = await backup(repo, { source: src, ...opts });
  backend.hang = true;
  const out = join(dir, 'out');
  expect(await cancelledWithin((signal) => restore(repo, snapshotId, { target: out, overwrite: 'never', signal }), backend.blocked)).toBeLessThan(5000);
  expect((await allFiles(out)).filter((f) => f.includes('.restore-'))).toEqual([]);
  expect(await readdir(out)).toEqual([]);
});

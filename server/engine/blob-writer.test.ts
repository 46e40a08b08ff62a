import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { BlobWriter } from './blob-writer.ts';
import { WorkerPool } from './pool.ts';
import type { Repository } from './repository.ts';
import { tempDir } from './testing/fixtures.ts';
import { openTestRepo } from './testing/repo.ts';
import { verify } from './verify.ts';

let dir: string;
let cleanup: () => Promise<void>;
let repo: Repository;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
  ({ repo } = await openTestRepo(dir));
});
afterEach(async () => {
  await repo.close();
  await cleanup();
});

it('stores a chunk that comes back seen while its first copy is neither pending nor stored: encoded after all', async () => {
  const pool = new WorkerPool(repo.key, 1);
  const opts = { comp: 1, level: undefined, encrypt: true } as const;
  const plain = new Uint8Array(randomBytes(300 * 1024));
  try {
    // The pool's table learns the id outside the writer, as when another thread is still encoding the first copy.
    expect((await pool.encode({ ...opts, skipSeen: true }, new Uint8Array(plain))).seen).toBeUndefined();
    const writer = new BlobWriter(repo, pool, opts, true);
    const id = await (await writer.store(new Uint8Array(plain)))();
    await writer.finish();
    expect(repo.index.has(id, 'data', true)).toBe(true);
    const read = await verify(repo);
    expect(read.errors).toEqual([]);
    expect(read.chunksChecked).toBe(1);
  } finally {
    await pool.stopped();
  }
});

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { backup, restore } from './index.ts';
import { BlobWriter } from './blob-writer.ts';
import { newMasterKey } from './crypto.ts';
import { WorkerPool } from './pool.ts';
import { describeTree, tempDir, writeRandomFile } from './testing/fixtures.ts';
import { openTestRepo } from './testing/repo.ts';

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
});
afterEach(async () => {
  vi.restoreAllMocks();
  await cleanup();
});

it("reads a directory's large files first, and goes on with its small files while they are read", async () => {
  const src = join(dir, 'src');
  await mkdir(src);
  await writeRandomFile(join(src, 'b-large.bin'), 24 * 1024 * 1024);
  for (let i = 0; i < 20; i++) await writeFile(join(src, `a${i}.txt`), `small file ${i}\n`.repeat(50 + i));
  await writeRandomFile(join(src, 'c-large.bin'), 700 * 1024);
  const before = await describeTree(src);
  // What the backup hands over, in order: a large file's chunks, and small files.
  const events: string[] = [];
  const store = BlobWriter.prototype.store;
  vi.spyOn(BlobWriter.prototype, 'store').mockImplementation(function (this: BlobWriter, chunk) {
    events.push(`chunk ${chunk.length}`);
    return store.call(this, chunk);
  });
  const encodeFile = WorkerPool.prototype.encodeFile;
  vi.spyOn(WorkerPool.prototype, 'encodeFile').mockImplementation(function (this: WorkerPool, opts, file) {
    events.push('small');
    return encodeFile.call(this, opts, file);
  });
  const opened: string[] = [];
  const { repo } = await openTestRepo(join(dir, 'repo'), newMasterKey());
  try {
    const result = await backup(repo, {
      source: src,
      compression: 'zstd',
      encryption: true,
      deduplication: true,
      beforeOpen: (path) => void opened.push(Buffer.from(path).toString()),
    });
    expect(result.warnings.count).toBe(0);
    // The large files are opened first, in name order, then the small ones.
    expect(opened.slice(0, 2)).toEqual(['b-large.bin', 'c-large.bin']);
    expect(opened.slice(2)).toHaveLength(20);
    // Small files went to the worker before the 24 MiB file's last chunks were read: the walk
    // does not wait for a large file's read.
    const chunks = events.filter((e) => e.startsWith('chunk')).length;
    expect(chunks).toBeGreaterThan(10);
    expect(events.indexOf('small')).toBeLessThan(events.findLastIndex((e) => e.startsWith('chunk')) - 5);
    const out = join(dir, 'out');
    await restore(repo, result.snapshotId, { target: out, overwrite: 'never' });
    expect(await describeTree(out)).toEqual(before);
  } finally {
    await repo.close();
  }
});

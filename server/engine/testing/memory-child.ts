/**
 * Backs up, lists and restores a generated tree of N small files in this process, sampling the
 * heap (after a full collection) at every progress report, entry batch and few hundred listed
 * entries; prints {"growth": bytes above the heap before the first operation, "entries": n}.
 *   node --expose-gc memory-child.ts <work dir> <files>
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { backup, listEntries, restore } from '../index.ts';
import { openTestRepo } from './repo.ts';

const [work, count] = process.argv.slice(2);
const files = Number(count);
const gc = (globalThis as { gc?: () => void }).gc;
if (!work || !files || !gc) {
  console.error('usage: node --expose-gc memory-child.ts <work dir> <files>');
  process.exit(2);
}
const src = join(work, 'src');
for (let i = 0; i < files; i++) {
  // 100 files a directory, directories nested three deep.
  const d = join(src, `a${Math.floor(i / 1000)}`, `b${Math.floor(i / 100) % 10}`);
  if (i % 100 === 0) mkdirSync(d, { recursive: true });
  writeFileSync(join(d, `file-${i}.txt`), `line ${i} of some text\n`.repeat(50 + (i % 150)));
}
gc();
const before = process.memoryUsage().heapUsed;
let peak = before;
const sample = (): void => {
  gc();
  peak = Math.max(peak, process.memoryUsage().heapUsed);
};
const { repo } = await openTestRepo(work);
let entries = 0;
const result = await backup(repo, {
  source: src,
  compression: 'zstd',
  encryption: true,
  deduplication: true,
  onProgress: sample,
  onEntries: (batch) => {
    entries += batch.length;
    sample();
  },
});
let listed = 0;
for await (const _ of listEntries(repo, result.snapshotId)) if (++listed % 300 === 0) sample();
await restore(repo, result.snapshotId, { target: join(work, 'out'), overwrite: 'never', onProgress: sample });
sample();
process.stdout.write(`${JSON.stringify({ growth: peak - before, entries, listed })}\n`);

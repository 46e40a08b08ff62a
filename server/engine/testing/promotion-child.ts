/**
 * Backs up a generated tree of N small files (50 a directory), then restores it with the
 * main thread's young-generation collections profiled; prints {"promoted": bytes the restore's
 * scavenges moved into the old generation, "files": files restored}.
 *   node --max-semi-space-size=4 promotion-child.ts <work dir> <files>
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GCProfiler } from 'node:v8';
import { backup, restore } from '../index.ts';
import { openTestRepo } from './repo.ts';

const [work, count] = process.argv.slice(2);
const files = Number(count);
if (!work || !files) {
  console.error('usage: node promotion-child.ts <work dir> <files>');
  process.exit(2);
}
const src = join(work, 'src');
for (let i = 0; i < files; i++) {
  const d = join(src, `d${Math.floor(i / 500)}`, `e${Math.floor(i / 50)}`);
  if (i % 50 === 0) mkdirSync(d, { recursive: true });
  writeFileSync(join(d, `file-${i}.txt`), `line ${i} of some text\n`.repeat(20 + (i % 100)));
}
const { repo } = await openTestRepo(work);
const { snapshotId } = await backup(repo, { source: src, compression: 'zstd', encryption: true, deduplication: true });
const profiler = new GCProfiler();
profiler.start();
const result = await restore(repo, snapshotId, { target: join(work, 'out'), overwrite: 'never' });
const { statistics } = profiler.stop();
const oldSpace = (s: { heapSpaceStatistics: { spaceName: string; spaceUsedSize: number }[] }): number => s.heapSpaceStatistics.find((x) => x.spaceName === 'old_space')!.spaceUsedSize;
let promoted = 0;
for (const gc of statistics) if (gc.gcType === 'Scavenge' || gc.gcType === 'MinorMarkSweep') promoted += Math.max(0, oldSpace(gc.afterGC) - oldSpace(gc.beforeGC));
await repo.close();
process.stdout.write(`${JSON.stringify({ promoted, files: result.filesRestored })}\n`);

import { Worker } from 'node:worker_threads';
import { workerEnv } from '../compile-cache.ts';

/**
 * The counting scan that runs beside a backup (as restic's does), in a thread of its own: it
 * walks the source through directory handles (the same way the backup does, see source.ts),
 * counting regular files and their bytes, and reports the totals once done. It reads no content
 * and never follows a symlink. Stopped with the backup, or when the backup finishes first.
 */
export interface Scan {
  stop(): void;
}

export function startScan(root: string, onTotals: (files: number, bytes: number) => void): Scan {
  // Its objects live for one directory: a small young generation keeps its memory to a few MB.
  const worker = new Worker(new URL('./scan-worker.ts', import.meta.url), { workerData: { root }, resourceLimits: { maxYoungGenerationSizeMb: 4 }, env: workerEnv() });
  worker.unref();
  worker.on('message', (m: { files: number; bytes: number }) => onTotals(m.files, m.bytes));
  worker.on('error', () => {}); // the totals stay unknown; the backup does not depend on them
  return {
    stop: () => void worker.terminate(),
  };
}

import { Worker } from 'node:worker_threads';
import { workerEnv } from '../compile-cache.ts';
import type { ScanReply, ScanRequest } from './scan-worker.ts';

/**
 * The counting scan that runs beside a backup (as restic's does), in a thread of its own: it
 * walks the source through directory handles (the same way the backup does, see source.ts),
 * counting regular files and their bytes, and reports the totals once done. It reads no content
 * and never follows a symlink. Stopped with the backup, or when the backup finishes first.
 *
 * It lists each directory as the backup would (listing.ts) and keeps its recent listings, by
 * device and inode, for the backup to take: an entry is then examined once, not once by the scan
 * and again by the backup. A listing is kept for a few seconds at most (the backup sees the
 * directory as it was that long before, as it would with its own listing a little earlier) and
 * within a memory bound; past either, the backup lists the directory itself. A directory asked
 * for before the scan reaches it is answered when it does (the backup's walk goes the same way).
 */
export interface Scan {
  /** The scan's listing of the directory with this device and inode, or null if it holds none. */
  listing(dir: { dev: bigint; ino: bigint }): Promise<Uint8Array | null>;
  stop(): void;
}

const KEEP_BYTES = 4 * 1024 * 1024;
const KEEP_MS = 10_000;

export function startScan(root: string, onTotals: (files: number, bytes: number) => void): Scan {
  // Its objects live for one directory: a small young generation keeps its memory to a few MB.
  const worker = new Worker(new URL('./scan-worker.ts', import.meta.url), {
    workerData: { root, keepBytes: KEEP_BYTES, keepMs: KEEP_MS },
    resourceLimits: { maxYoungGenerationSizeMb: 4 },
    env: workerEnv(),
  });
  worker.unref();
  let alive = true;
  let nextId = 0;
  let queued: ScanRequest['dirs'] = [];
  const waiting = new Map<number, (d: Uint8Array | null) => void>();
  const end = (): void => {
    alive = false;
    for (const r of waiting.values()) r(null);
    waiting.clear();
    queued = [];
  };
  worker.on('message', (m: ScanReply) => {
    if ('totals' in m) return onTotals(m.totals.files, m.totals.bytes);
    for (const a of m.answers) {
      waiting.get(a.id)?.(a.data);
      waiting.delete(a.id);
    }
    if (waiting.size === 0) worker.unref();
  });
  worker.on('error', end); // the totals stay unknown and the backup lists everything itself
  worker.on('exit', end);
  const flush = (): void => {
    const request: ScanRequest = { dirs: queued };
    queued = [];
    if (!alive || request.dirs.length === 0) return;
    worker.ref();
    worker.postMessage(request);
  };
  return {
    listing: (dir) => {
      if (!alive) return Promise.resolve(null);
      return new Promise((resolve) => {
        if (queued.length === 0) setImmediate(flush);
        const id = nextId++;
        queued.push({ id, key: `${dir.dev}:${dir.ino}` });
        waiting.set(id, resolve);
      });
    },
    stop: () => {
      end();
      void worker.terminate();
    },
  };
}

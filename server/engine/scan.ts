import { Worker } from 'node:worker_threads';
import { workerEnv } from '../compile-cache.ts';
import { decompress } from './compress.ts';
import { releasePrivate } from './release.ts';
import type { KeptListing, ScanReply, ScanRequest } from './scan-worker.ts';

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
 * Once its walk is done, the scan hands the listings it still keeps to the backup's thread and
 * its own thread ends, instead of holding an isolate for the rest of the backup.
 */
export interface Scan {
  /** The scan's listing of the directory with this device and inode, or null if it holds none. */
  listing(dir: { dev: bigint; ino: bigint }): Promise<Uint8Array | null>;
  stop(): void;
}

/** The thread's name (as the system shows it: /proc/<pid>/task/<tid>/comm). */
export const SCAN_THREAD = 'backup-scan';
/**
 * Enough for a backup that reaches a directory a minute after the scan listed it: with 4 MB and
 * 10 s, a full backup of a million small files listed most directories a second time in its one
 * worker, its busiest thread. Counted as kept, compressed (a million small files' listings, 50 MB
 * as listed, keep in about 7 MB).
 */
const KEEP_BYTES = 64 * 1024 * 1024;
const KEEP_MS = 60_000;

/** A listing as the scan kept it, as listed. */
function unpacked(listing: KeptListing): Uint8Array {
  if (listing.raw === 0) return listing.data;
  const data = decompress(listing.data, 1, listing.raw);
  releasePrivate(listing.data);
  return data;
}

export function startScan(root: string, onTotals: (files: number, bytes: number) => void): Scan {
  // Its objects live for one directory: a small young generation keeps its memory to a few MB.
  const worker = new Worker(new URL('./scan-worker.ts', import.meta.url), {
    workerData: { root, keepBytes: KEEP_BYTES, keepMs: KEEP_MS },
    resourceLimits: { maxYoungGenerationSizeMb: 4 },
    env: workerEnv(),
    name: SCAN_THREAD,
  });
  worker.unref();
  let alive = true;
  let nextId = 0;
  let queued: ScanRequest['dirs'] = [];
  const waiting = new Map<number, { key: string; resolve: (d: Uint8Array | null) => void }>();
  /** The listings the scan left when its walk ended, by key, oldest first. */
  const rest = new Map<string, { listing: KeptListing; at: number }>();
  const fromRest = (key: string): Uint8Array | null => {
    const now = Date.now();
    for (const [k, r] of rest) {
      if (now - r.at <= KEEP_MS) break;
      rest.delete(k);
    }
    const r = rest.get(key);
    rest.delete(key);
    return r ? unpacked(r.listing) : null;
  };
  const end = (): void => {
    alive = false;
    for (const w of waiting.values()) w.resolve(fromRest(w.key));
    waiting.clear();
    queued = [];
  };
  worker.on('message', (m: ScanReply) => {
    if ('totals' in m) return onTotals(m.totals.files, m.totals.bytes);
    if ('rest' in m) {
      for (const r of m.rest) rest.set(r.key, r);
      return;
    }
    for (const a of m.answers) {
      const w = waiting.get(a.id);
      waiting.delete(a.id);
      if (w) w.resolve(a.listing ? unpacked(a.listing) : fromRest(w.key));
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
      const key = `${dir.dev}:${dir.ino}`;
      const handed = fromRest(key);
      if (handed || !alive) return Promise.resolve(handed);
      return new Promise((resolve) => {
        if (queued.length === 0) setImmediate(flush);
        const id = nextId++;
        queued.push({ id, key });
        waiting.set(id, { key, resolve });
      });
    },
    stop: () => {
      end();
      rest.clear();
      void worker.terminate();
    },
  };
}

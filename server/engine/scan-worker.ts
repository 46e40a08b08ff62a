import { closeSync, fstatSync, lstatSync, openSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { compress } from './compress.ts';
import { listDirectory } from './listing.ts';
import { releasePrivate } from './release.ts';
import type { Listed } from './listing.ts';
import { DIR_FLAGS, atPath } from './source.ts';

/**
 * Thread side of scan.ts: counts regular files and their bytes under the root, through directory
 * handles, in the order the backup walks (depth first, names in byte order), and keeps its recent
 * listings for the backup to take instead of listing the same directories again (a request for
 * a directory it is about to reach waits for it).
 */
export type ScanRequest = { dirs: { id: number; key: string }[] };
/**
 * A listing as kept: `raw` is its length when `data` is zstd-compressed (a listing kept for later
 * is: the names, times and inode numbers of a directory compress several times, and a million
 * files' listings took about 50 MB), 0 when `data` is the listing itself.
 */
export interface KeptListing {
  data: Uint8Array;
  raw: number;
}
export type ScanAnswer = { id: number; listing: KeptListing | null };
/** `rest`: once the walk is done, the listings still kept (with when each was listed), and the thread ends. */
export type ScanReply = { totals: { files: number; bytes: number } } | { answers: ScanAnswer[] } | { rest: { key: string; listing: KeptListing; at: number }[] };

const { root, keepBytes, keepMs } = workerData as { root: string; keepBytes: number; keepMs: number };
let files = 0;
let bytes = 0;

/**
 * Listings are kept as listed while they take this much in all: compressing each and
 * decompressing it again in the backup's thread cost a small tree's incremental backup about
 * 5 % of its CPU. Past it they are compressed (a million files' listings: about 50 MB as listed).
 */
const KEEP_AS_LISTED = 4 * 1024 * 1024;

/** Listings by the directory's "dev:ino", oldest first; keptBytes counts them as kept (compressed past KEEP_AS_LISTED). */
const kept = new Map<string, { listing: KeptListing; at: number }>();
let keptBytes = 0;

function drop(key: string, listing: KeptListing): void {
  kept.delete(key);
  keptBytes -= listing.data.length;
}

function expire(): void {
  const now = Date.now();
  for (const [key, k] of kept) {
    if (now - k.at <= keepMs) break;
    drop(key, k.listing);
  }
}

function take(key: string): KeptListing | null {
  const k = kept.get(key);
  if (!k) return null;
  drop(key, k.listing);
  return Date.now() - k.at <= keepMs ? k.listing : null;
}

function keep(key: string, data: Uint8Array): void {
  expire();
  if (keptBytes >= keepBytes || kept.has(key)) return;
  const packed = keptBytes + data.length <= KEEP_AS_LISTED ? null : compress(data, 1, 1);
  const listing = packed?.code === 1 ? { data: packed.data, raw: data.length } : { data, raw: 0 };
  if (packed?.code === 1) releasePrivate(data); // a listing is a buffer of its own (ByteWriter.finish)
  if (keptBytes + listing.data.length > keepBytes) return;
  kept.set(key, { listing, at: Date.now() });
  keptBytes += listing.data.length;
}

/**
 * Directories listed as subdirectories and not visited yet, with the backup's requests for them
 * that arrived first (answered when the scan gets there, instead of listing them twice).
 */
const ahead = new Map<string, number[]>();

/** Answers go out together once the current directory is done (one message, not one per listing). */
let answers: ScanAnswer[] = [];

function answer(more: ScanAnswer[]): void {
  if (more.length === 0) return;
  if (answers.length === 0) setImmediate(send);
  answers.push(...more);
}

function send(): void {
  const reply: ScanReply = { answers };
  answers = [];
  parentPort!.postMessage(reply, reply.answers.flatMap((a) => (a.listing ? [a.listing.data.buffer as ArrayBuffer] : [])));
}

parentPort!.on('message', (m: ScanRequest) => {
  const now: ScanAnswer[] = [];
  for (const { id, key } of m.dirs) {
    const listing = take(key);
    const waiting = listing ? undefined : ahead.get(key);
    if (waiting) waiting.push(id);
    else now.push({ id, listing });
  }
  answer(now);
});

/** The listing of a directory just visited (null: it could not be listed): to whoever waits for it, else kept. */
function listed(key: string, data: Uint8Array | null): void {
  const waiting = ahead.get(key);
  ahead.delete(key);
  if (waiting && waiting.length > 0) answer(waiting.map((id, i) => ({ id, listing: i === 0 && data ? { data, raw: 0 } : null })));
  else if (data) keep(key, data);
}

/** Lists the directory open as `fd` (its handle is closed once its subdirectories are done). */
async function walk(rootFd: number): Promise<void> {
  const stack: { fd: number; dirs: Listed['dirs']; next: number }[] = [];
  const visit = (fd: number, expected: string | null): void => {
    let list;
    try {
      const st = fstatSync(fd, { bigint: true });
      const key = `${st.dev}:${st.ino}`;
      if (expected !== null && key !== expected) listed(expected, null);
      list = listDirectory(fd);
      listed(key, 'error' in list ? null : list.data);
      if ('error' in list) throw new Error(list.error);
    } catch {
      closeSync(fd); // the backup reports it
      return;
    }
    files += list.files;
    bytes += list.bytes;
    for (const d of list.dirs) ahead.set(`${d.dev}:${d.ino}`, []);
    stack.push({ fd, dirs: list.dirs, next: 0 });
  };
  visit(rootFd, null);
  while (stack.length > 0) {
    const top = stack.at(-1)!;
    const d = top.dirs[top.next++];
    if (!d) {
      closeSync(top.fd);
      stack.pop();
      continue;
    }
    const key = `${d.dev}:${d.ino}`;
    let fd: number;
    try {
      fd = openSync(atPath(top.fd, d.name), DIR_FLAGS);
    } catch {
      listed(key, null);
      continue;
    }
    visit(fd, key);
    await new Promise(setImmediate); // the backup's requests are answered between directories
  }
}

try {
  const st = lstatSync(root);
  if (st.isFile()) {
    files = 1;
    bytes = st.size;
  } else {
    await walk(openSync(root, DIR_FLAGS));
  }
  const reply: ScanReply = { totals: { files, bytes } };
  parentPort!.postMessage(reply);
} catch {
  // the backup reports an unreadable source itself
} finally {
  for (const key of [...ahead.keys()]) listed(key, null); // nobody waits for a directory the scan will not reach
  // What is left to give goes to the backup's thread, and this one ends (its isolate costs the
  // backup 20–25 MB, the listings at most keepBytes): a request already on its way is answered
  // null, and scan.ts then looks for the listing among these.
  expire();
  const rest = [...kept].map(([key, k]) => ({ key, listing: k.listing, at: k.at }));
  kept.clear();
  keptBytes = 0;
  const reply: ScanReply = { rest };
  parentPort!.postMessage(reply, rest.map((r) => r.listing.data.buffer as ArrayBuffer));
  parentPort!.unref();
}

import { createHash } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { lstat, open, readlink, realpath } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { BlobWriter } from './blob-writer.ts';
import { chunkStream } from './chunker.ts';
import { compressionCode } from './compress.ts';
import { randomId } from './crypto.ts';
import { EngineError, cancelled, errnoCode, throwIfAborted } from './errors.ts';
import { ProgressReporter } from './progress.ts';
import { collector, release } from './release.ts';
import type { Repository } from './repository.ts';
import type { SnapshotHeader, SnapshotOptions, TreeEntry } from './snapshot.ts';
import type { Compression, Progress } from './types.ts';
import { walkSource } from './walk.ts';
import type { WalkedEntry } from './walk.ts';

export interface BackupOptions {
  source: string;
  compression: Compression;
  compressionLevel?: number;
  encryption: boolean;
  deduplication: boolean;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
}

export interface BackupResult {
  snapshotId: string;
  filesBackedUp: number;
  sizeBytes: number;
  storedBytes: number;
  entries: number;
  errors: { path: string; message: string }[];
}

/** Files read at once: enough to hide open/read latency of small files. */
const FILE_CONCURRENCY = 8;
/** Files up to this size are read in one piece instead of through the streaming chunker. */
const WHOLE_READ_LIMIT = 1024 * 1024;
const collect = collector('minor', 16 * 1024 * 1024, 128);

async function resolveSource(source: string): Promise<{ root: string; stats: BigIntStats }> {
  try {
    const root = await realpath(source);
    return { root, stats: await lstat(root, { bigint: true }) };
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') {
      throw new EngineError('SOURCE_NOT_FOUND', `source ${source} does not exist`, { path: source });
    }
    throw new EngineError('SOURCE_UNREADABLE', `cannot read source ${source}: ${(err as Error).message}`, { path: source });
  }
}

/** The newest snapshot of the same source written with the same encryption: its unchanged files are not read again. */
async function parentTree(repo: Repository, root: string, encryption: boolean): Promise<{ id: string; files: Map<string, TreeEntry> } | null> {
  const candidates = (await repo.snapshots()).filter((s) => s.source === root && s.options.encryption === encryption);
  const latest = candidates.at(-1);
  if (!latest) return null;
  const files = new Map<string, TreeEntry>();
  for (const e of await repo.tree(latest.id)) if (e.t === 'f') files.set(e.p, e);
  return { id: latest.id, files };
}

function baseEntry(w: WalkedEntry): TreeEntry {
  return { p: w.path, t: w.kind, s: w.size, m: w.mode, mt: w.mtimeNs };
}

function unchanged(prev: TreeEntry | undefined, w: WalkedEntry, repo: Repository, encryption: boolean): prev is TreeEntry & { c: string[] } {
  return (
    prev !== undefined &&
    prev.c !== undefined &&
    prev.s === w.size &&
    prev.mt === w.mtimeNs &&
    prev.ct === w.ctimeNs &&
    prev.ino === w.ino &&
    prev.c.every((id) => repo.index.has(id, encryption))
  );
}

export async function backup(repo: Repository, opts: BackupOptions): Promise<BackupResult> {
  repo.assertOpen();
  const { signal } = opts;
  throwIfAborted(signal);
  const { root, stats: rootStats } = await resolveSource(opts.source);
  await repo.refreshIndex();
  const walked = await walkSource(root, rootStats, signal);
  const errors = [...walked.errors];
  const parent = opts.deduplication ? await parentTree(repo, root, opts.encryption) : null;

  const files = walked.entries.filter((w) => w.kind === 'f');
  const progress = new ProgressReporter(opts.onProgress, {
    filesDone: 0,
    filesTotal: files.length,
    bytesDone: 0,
    bytesTotal: files.reduce((n, w) => n + w.size, 0),
  });
  progress.emit();

  const writer = new BlobWriter(repo, { comp: compressionCode(opts.compression), level: opts.compressionLevel, encrypt: opts.encryption }, opts.deduplication);
  const tree: (TreeEntry | null)[] = new Array(walked.entries.length).fill(null);

  const backupFile = async (w: WalkedEntry): Promise<TreeEntry | null> => {
    const entry = baseEntry(w);
    entry.ct = w.ctimeNs;
    entry.ino = w.ino;
    const prev = parent?.files.get(w.path);
    if (unchanged(prev, w, repo, opts.encryption)) {
      progress.add(1, entry.s);
      return { ...entry, h: prev.h!, c: prev.c };
    }
    let fh: FileHandle;
    try {
      fh = await open(w.abs, 'r');
    } catch (err) {
      errors.push({ path: w.path, message: (err as Error).message });
      progress.add(1, entry.s);
      return null;
    }
    const sha = createHash('sha256');
    const ids: (() => Promise<string>)[] = [];
    let size = 0;
    try {
      const storeChunk = async (chunk: Uint8Array): Promise<void> => {
        throwIfAborted(signal);
        sha.update(chunk);
        collect(chunk.length);
        size += chunk.length;
        progress.add(0, chunk.length);
        ids.push(await writer.store(chunk));
      };
      if (entry.s <= WHOLE_READ_LIMIT) {
        // One read of size + 1 bytes tells whether the file grew since the walk.
        const buf = new Uint8Array(entry.s + 1);
        let n = 0;
        for (;;) {
          const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
          if (bytesRead === 0) break;
          n += bytesRead;
          if (n === buf.length) break;
        }
        if (n > entry.s) {
          await streamFile(fh, storeChunk);
        } else if (n <= repo.chunker.params.min) {
          if (n > 0) await storeChunk(new Uint8Array(buf.buffer.transfer(n))); // the whole file is one chunk
        } else {
          for (let at = 0; at < n; ) {
            const len = repo.chunker.cut(buf, at, n);
            await storeChunk(buf.slice(at, at + len));
            at += len;
          }
          release(buf);
        }
      } else {
        await streamFile(fh, storeChunk);
      }
      entry.c = await Promise.all(ids.map((f) => f()));
    } catch (err) {
      await Promise.allSettled(ids.map((f) => f()));
      if (err instanceof EngineError) throw err;
      errors.push({ path: w.path, message: (err as Error).message });
      progress.add(1, 0);
      return null;
    } finally {
      await fh.close().catch(() => {});
    }
    progress.add(1, entry.s - size);
    entry.s = size;
    entry.h = sha.digest('hex');
    return entry;

    async function streamFile(handle: FileHandle, storeChunk: (c: Uint8Array) => Promise<void>): Promise<void> {
      size = 0;
      let position = 0;
      const read = async (into: Uint8Array, offset: number, length: number): Promise<number> => {
        const { bytesRead } = await handle.read(into, offset, length, position);
        position += bytesRead;
        return bytesRead;
      };
      for await (const chunk of chunkStream(read, repo.chunker)) await storeChunk(chunk);
    }
  };

  const backupEntry = async (w: WalkedEntry): Promise<TreeEntry | null> => {
    if (w.kind === 'd') return baseEntry(w);
    if (w.kind === 'l') {
      try {
        return { ...baseEntry(w), l: await readlink(w.abs) };
      } catch (err) {
        errors.push({ path: w.path, message: (err as Error).message });
        return null;
      }
    }
    return backupFile(w);
  };

  try {
    let next = 0;
    const runner = async (): Promise<void> => {
      while (next < walked.entries.length) {
        throwIfAborted(signal);
        const i = next++;
        tree[i] = await backupEntry(walked.entries[i]!);
      }
    };
    await Promise.all(Array.from({ length: FILE_CONCURRENCY }, runner));
    throwIfAborted(signal);
    await writer.finish();
    throwIfAborted(signal);
  } catch (err) {
    await writer.abandon();
    if (signal?.aborted) throw cancelled();
    throw err;
  }

  const entries = tree.filter((e): e is TreeEntry => e !== null);
  const stored = entries.filter((e) => e.t === 'f');
  const id = randomId();
  const options: SnapshotOptions = { compression: opts.compression, encryption: opts.encryption, deduplication: opts.deduplication };
  if (opts.compressionLevel !== undefined) options.compressionLevel = opts.compressionLevel;
  const treeBytes = await repo.saveMeta(`trees/${id}`, 'tree', entries);
  const header: SnapshotHeader = {
    version: 1,
    id,
    time: new Date().toISOString(),
    hostname: hostname(),
    source: root,
    parent: parent?.id ?? null,
    options,
    summary: { files: stored.length, entries: entries.length, sizeBytes: stored.reduce((n, e) => n + e.s, 0), storedBytes: 0, errors: errors.length },
  };
  header.summary.storedBytes = writer.storedBytes + treeBytes;
  header.summary.storedBytes += await repo.saveMeta(`snapshots/${id}`, 'snapshot', header);
  progress.finish();
  return {
    snapshotId: id,
    filesBackedUp: stored.length,
    sizeBytes: header.summary.sizeBytes,
    storedBytes: header.summary.storedBytes,
    entries: entries.length,
    errors,
  };
}

import { createHash, createSecretKey, randomBytes } from 'node:crypto';
import { closeSync, lstatSync, openSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { blobKeys, decodeBlob, encodeBlob } from './blob.ts';
import { chunkId, newMasterKey } from './crypto.ts';
import { INLINE_BACKLOG, INLINE_MAX, WorkerPool } from './pool.ts';
import { DIR_FLAGS } from './source.ts';
import { tempDir } from './testing/fixtures.ts';

let dir: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ path: dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await cleanup();
});

it('hands back each small file of a batch as it was read: its chunk id, sha256 and stored form, or why it was not stored', async () => {
  const src = join(dir, 'src');
  await mkdir(src);
  const contents: Buffer[] = [];
  for (let i = 0; i < 700; i++) {
    // Some files alike (the same chunk id), one empty, two larger than the worker's first read buffer; three batches.
    const body = i === 7 ? Buffer.alloc(0) : Buffer.from(`file ${i % 500} `.repeat(i === 600 ? 9000 : i === 650 ? 24000 : 1 + (i % 50)));
    contents.push(body);
    await writeFile(join(src, `f${i}`), body);
  }
  const key = newMasterKey();
  const keys = { encryption: createSecretKey(key.encryption), chunkId: createSecretKey(key.chunkId) };
  const fd = openSync(src, DIR_FLAGS);
  const pool = new WorkerPool(key, 1);
  const grew = 300;
  const replaced = 400;
  try {
    const results = await Promise.all(
      contents.map((body, i) => {
        const { dev, ino } = lstatSync(join(src, `f${i}`), { bigint: true });
        const size = i === grew ? body.length - 1 : body.length;
        return pool.encodeFile({ comp: 1, level: undefined, encrypt: true }, { dirFd: fd, name: Buffer.from(`f${i}`), size, dev, ino: i === replaced ? ino + 1n : ino });
      }),
    );
    expect(results[grew]).toEqual({ grew: true });
    expect(results[replaced]).toEqual({ warning: 'replaced during the backup by another file: not read' });
    results.forEach((r, i) => {
      if (i === grew || i === replaced) return;
      const body = contents[i]!;
      if (!('blob' in r)) throw new Error(`file ${i}: ${JSON.stringify(r)}`);
      expect(Buffer.from(r.sha256)).toEqual(createHash('sha256').update(body).digest());
      if (body.length === 0) {
        expect(r.blob).toBeNull();
        return;
      }
      const blob = r.blob!;
      expect(blob.rawLength).toBe(body.length);
      expect(Buffer.from(blob.id)).toEqual(Buffer.from(chunkId(keys.chunkId, body)));
      expect(Buffer.from(decodeBlob(keys, { id: blob.id, encrypted: true, comp: blob.comp, rawLength: blob.rawLength }, blob.data))).toEqual(body);
    });
    // A batch's blobs share one buffer, freed once the last of them is released (copied into a pack or dropped).
    const blobs = results.flatMap((r) => ('blob' in r && r.blob ? [r.blob] : []));
    const buffers = new Set(blobs.map((b) => b.data.buffer as ArrayBuffer));
    expect(buffers.size).toBe(3);
    for (const buffer of buffers) {
      const sharing = blobs.filter((b) => b.data.buffer === buffer);
      for (const b of sharing.slice(0, -1)) b.release!();
      expect(buffer.detached).toBe(false);
      sharing.at(-1)!.release!();
      expect(buffer.detached).toBe(true);
    }
  } finally {
    await pool.stopped();
    closeSync(fd);
  }
});

/** Compressible chunks of `size` bytes, each different. */
function chunks(n: number, size: number): Uint8Array[] {
  return Array.from({ length: n }, () => new Uint8Array(Buffer.alloc(size, `${randomBytes(16).toString('hex')} some text\n`)));
}

it('holds a chunk for its own thread only while the worker has a backlog, never a chunk above INLINE_MAX, with the output a worker gives', async () => {
  const key = newMasterKey();
  const keys = { encryption: createSecretKey(key.encryption), chunkId: createSecretKey(key.chunkId) };
  const pool = new WorkerPool(key, 1);
  const opts = { comp: 1, level: undefined, encrypt: true } as const;
  try {
    const size = 1 << 20;
    const held = 3;
    const plains = chunks(INLINE_BACKLOG / size + held, size);
    const copies = plains.map((p) => Buffer.from(p));
    // Sent at once: the worker answers nothing before this turn ends, so its backlog is every chunk sent to it.
    const results = await Promise.all(plains.map((p) => pool.encode(opts, p)));
    // The chunks after INLINE_BACKLOG bytes went to the worker were held here: this thread encoded
    // the first on its next turn, the worker may have taken others once its backlog fell.
    expect(pool.encodedHere).toBeGreaterThanOrEqual(size);
    expect(pool.encodedHere).toBeLessThanOrEqual(held * size);
    results.forEach((blob, i) => {
      expect(Buffer.from(decodeBlob(keys, { id: blob.id, encrypted: true, comp: blob.comp, rawLength: blob.rawLength }, blob.data))).toEqual(copies[i]);
      expect(blob.comp).toBe(1);
      expect(blob.data.byteLength).toBe(blob.data.buffer.byteLength); // its own buffer, as a worker's (transferable)
    });
    // Chunks handed over are freed, whichever thread encoded them.
    for (const p of plains) expect((p.buffer as ArrayBuffer).detached).toBe(true);

    const before = pool.encodedHere;
    const big = chunks(INLINE_BACKLOG / size + held, INLINE_MAX + 1);
    await Promise.all(big.map((p) => pool.encode(opts, p)));
    expect(pool.encodedHere).toBe(before);
  } finally {
    await pool.stopped();
  }

  // Unsealed, the stored form is the same bytes from either thread.
  const plain = chunks(1, 700 * 1024)[0]!;
  const outputs = [];
  for (const inlineBacklog of [Number.POSITIVE_INFINITY, 0]) {
    const one = new WorkerPool(key, 1, { inlineBacklog });
    try {
      await one.encode(opts, chunks(1, 4096)[0]!); // starts the worker: until then it may start one, and encodes nothing itself
      outputs.push(await one.encode({ comp: 1, level: undefined, encrypt: false }, new Uint8Array(plain)));
      expect(one.encodedHere).toBe(inlineBacklog === 0 ? plain.length : 0);
    } finally {
      await one.stopped();
    }
  }
  expect(Buffer.from(outputs[1]!.data)).toEqual(Buffer.from(outputs[0]!.data));
  expect(outputs[1]!.id).toEqual(outputs[0]!.id);
});

it('hands held chunks to the worker as its backlog falls: both threads encode them, each chunk once', async () => {
  const key = newMasterKey();
  const keys = { encryption: createSecretKey(key.encryption), chunkId: createSecretKey(key.chunkId) };
  const pool = new WorkerPool(key, 1, { inlineBacklog: 1 });
  const opts = { comp: 1, level: undefined, encrypt: true } as const;
  try {
    await pool.encode(opts, chunks(1, 4096)[0]!); // starts the worker
    const size = 1 << 20;
    const plains = chunks(16, size);
    const copies = plains.map((p) => Buffer.from(p));
    // The first goes to the idle worker, the other 15 are held. This thread is kept busy until the
    // worker has surely answered: it is then sent held chunks as each answer comes back.
    const results = Promise.all(plains.map((p) => pool.encode(opts, p)));
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
    const blobs = await results;
    expect(pool.encodedHere).toBeGreaterThanOrEqual(size);
    expect(pool.encodedHere).toBeLessThanOrEqual(14 * size);
    blobs.forEach((blob, i) => {
      expect(Buffer.from(decodeBlob(keys, { id: blob.id, encrypted: true, comp: blob.comp, rawLength: blob.rawLength }, blob.data))).toEqual(copies[i]);
    });
  } finally {
    await pool.stopped();
  }
});

it("hands back the plaintext of a chunk or small file whose id a thread of the operation encoded before (skipSeen), whichever thread did; encodeSeen encodes it as a worker does", async () => {
  const key = newMasterKey();
  const keys = blobKeys(key);
  const plain = chunks(1, 256 * 1024)[0]!;
  const body = Buffer.from('the same file twice '.repeat(500));
  const src = join(dir, 'src');
  await mkdir(src);
  const contents: Record<string, Uint8Array> = { a: plain, b: body, c: body, d: Buffer.from('another file') };
  for (const [name, content] of Object.entries(contents)) await writeFile(join(src, name), content);
  const fd = openSync(src, DIR_FLAGS);
  const file = (name: string) => {
    const { dev, ino, size } = lstatSync(join(src, name), { bigint: true });
    return { dirFd: fd, name: Buffer.from(name), size: Number(size), dev, ino };
  };
  const opts = { comp: 1, level: undefined, encrypt: true, skipSeen: true } as const;
  // inlineBacklog 0: once the worker runs, every chunk it may take is encoded here; small files are read by the worker.
  const pool = new WorkerPool(key, 1, { inlineBacklog: 0 });
  try {
    await pool.encode(opts, chunks(1, 4096)[0]!); // starts the worker
    const first = await pool.encode(opts, new Uint8Array(plain));
    expect(first.seen).toBeUndefined();
    expect(pool.encodedHere).toBe(plain.length);
    const again = await pool.encode(opts, new Uint8Array(plain));
    expect(again.seen).toBe(true);
    expect(pool.encodedHere).toBe(plain.length); // handed back, not encoded
    expect(again.id).toEqual(first.id);
    expect(Buffer.from(again.data)).toEqual(Buffer.from(plain));
    // Not asked to skip, the same chunk is encoded.
    expect((await pool.encode({ ...opts, skipSeen: false }, new Uint8Array(plain))).seen).toBeUndefined();

    // The worker sees what this thread encoded (a), and what it encoded itself in the same batch (c after b).
    const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map((name) => pool.encodeFile(opts, file(name))));
    const blobs = [a, b, c, d].map((r) => {
      if (!r || !('blob' in r) || !r.blob) throw new Error('not read');
      return r;
    });
    expect(blobs.map((r) => r.blob!.seen ?? false)).toEqual([true, false, true, false]);
    expect(blobs[0]!.blob!.id).toEqual(first.id);
    expect(blobs[2]!.blob!.id).toEqual(blobs[1]!.blob!.id);
    expect(Buffer.from(blobs[2]!.blob!.data)).toEqual(body);
    expect(Buffer.from(blobs[2]!.sha256)).toEqual(createHash('sha256').update(body).digest());

    // Its first copy not stored after all: encoded here as any blob, and the batch's view released.
    const seen = blobs[2]!.blob!;
    const encoded = pool.encodeSeen(opts, seen);
    expect(encoded.seen).toBeUndefined();
    expect(encoded.id).toEqual(seen.id);
    expect(Buffer.from(decodeBlob(keys, { id: encoded.id, encrypted: true, comp: encoded.comp, rawLength: encoded.rawLength }, encoded.data))).toEqual(body);
    for (const r of blobs) if (r.blob !== seen) r.blob!.release!();
    expect((seen.data.buffer as ArrayBuffer).detached).toBe(true);
  } finally {
    await pool.stopped();
    closeSync(fd);
  }
});

it('cancels a chunk waiting to be encoded on its own thread when closed: it rejects, its buffer is freed, nothing is encoded', async () => {
  const pool = new WorkerPool(newMasterKey(), 1, { inlineBacklog: 0 });
  const opts = { comp: 1, level: undefined, encrypt: true } as const;
  await pool.encode(opts, chunks(1, 4096)[0]!);
  const plain = chunks(1, 1 << 20)[0]!;
  const encoded = pool.encode(opts, plain);
  pool.close();
  await expect(encoded).rejects.toMatchObject({ code: 'CANCELLED' });
  expect((plain.buffer as ArrayBuffer).detached).toBe(true);
  await new Promise((resolve) => setImmediate(resolve));
  expect(pool.encodedHere).toBe(0);
  await expect(pool.encode(opts, chunks(1, 4096)[0]!)).rejects.toMatchObject({ code: 'CANCELLED' });
  await pool.stopped();
});

it("decodes a run of a restore's small files on its own thread while the writer has one queued; the writer writes the same files", async () => {
  const key = newMasterKey();
  const keys = blobKeys(key);
  const target = join(dir, 'out');
  await mkdir(target);
  const fd = openSync(target, DIR_FLAGS);
  const pool = new WorkerPool(key, 1);
  const bodies = new Map<string, Buffer>();
  try {
    // Twenty runs of 64 files asked in one turn: the writer has the first in hand while the others queue.
    const runs: Promise<Awaited<ReturnType<WorkerPool['decodeRun']>>>[] = [];
    for (let r = 0; r < 20; r++) {
      const parts: Uint8Array[] = [];
      const blobs = [];
      let at = 0;
      for (let i = 0; i < 64; i++) {
        const name = `r${r}f${i}`;
        const body = Buffer.from(`run ${r} file ${i} `.repeat(20 + i));
        const blob = encodeBlob(keys, body, 1, undefined, true);
        if (r === 15 && i === 3) blob.data[20]! ^= 1; // fails its check, wherever it is decoded
        else bodies.set(name, body);
        blobs.push({ ref: { id: blob.id, encrypted: true, comp: blob.comp, rawLength: body.length }, offset: at, length: blob.data.length, file: { dirFd: fd, name, mode: 0o644, mtime: 1_700_000_000 } });
        parts.push(blob.data);
        at += blob.data.length;
      }
      runs.push(pool.decodeRun(blobs, new Uint8Array(Buffer.concat(parts))));
    }
    const decoded = await Promise.all(runs);
    expect(pool.runsDecodedHere).toBeGreaterThan(0);
    expect(pool.runsDecodedHere).toBeLessThan(20);
    decoded.forEach((run, r) =>
      run.errors.forEach((error, i) => {
        if (r === 15 && i === 3) expect(error).toMatchObject({ code: 'CORRUPT_DATA' });
        else expect(error).toBeNull();
      }),
    );
    for (const [name, body] of bodies) expect(readFileSync(join(target, name)).equals(body), name).toBe(true);
    expect(() => lstatSync(join(target, 'r15f3'))).toThrow();
  } finally {
    await pool.stopped();
    closeSync(fd);
  }
});

it("decodes chunks of a restore's multi-chunk file on its own thread once the worker has a backlog; the worker writes every chunk where it belongs", async () => {
  const key = newMasterKey();
  const keys = blobKeys(key);
  const path = join(dir, 'large');
  const fd = openSync(path, 'w');
  const pool = new WorkerPool(key, 1);
  try {
    // Forty chunks of 1 MiB that do not compress, asked in one turn: past INLINE_BACKLOG the rest are decoded here.
    const plains = Array.from({ length: 40 }, () => new Uint8Array(randomBytes(1 << 20)));
    const whole = Buffer.concat(plains);
    const writes = plains.map((plain, i) => {
      const blob = encodeBlob(keys, plain, 1, undefined, true);
      if (i === 37) blob.data[20]! ^= 1; // fails its check, wherever it is decoded
      return pool.decodeTo({ id: blob.id, encrypted: true, comp: blob.comp, rawLength: plain.length }, new Uint8Array(blob.data), { fd, position: i << 20 });
    });
    const settled = await Promise.allSettled(writes);
    expect(pool.chunksDecodedHere).toBeGreaterThan(0);
    expect(pool.chunksDecodedHere).toBeLessThan(40);
    settled.forEach((s, i) => {
      if (i === 37) expect(s).toMatchObject({ status: 'rejected', reason: { code: 'CORRUPT_DATA' } });
      else expect(s.status).toBe('fulfilled');
    });
    const written = readFileSync(path);
    for (let i = 0; i < 40; i++) {
      if (i !== 37) expect(written.subarray(i << 20, (i + 1) << 20).equals(whole.subarray(i << 20, (i + 1) << 20)), `chunk ${i}`).toBe(true);
    }
  } finally {
    await pool.stopped();
    closeSync(fd);
  }
});

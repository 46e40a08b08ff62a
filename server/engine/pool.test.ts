import { createHash, createSecretKey } from 'node:crypto';
import { closeSync, lstatSync, openSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { decodeBlob } from './blob.ts';
import { chunkId, newMasterKey } from './crypto.ts';
import { WorkerPool } from './pool.ts';
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
    // Some files alike (the same chunk id), one empty; three batches.
    const body = i === 7 ? Buffer.alloc(0) : Buffer.from(`file ${i % 500} `.repeat(1 + (i % 50)));
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

import type { FileHandle } from 'node:fs/promises';
import { chunkStream } from './chunker.ts';
import type { Chunker } from './chunker.ts';
import { release } from './release.ts';

/** Files up to this size are read in one piece instead of through the streaming chunker. */
const WHOLE_READ_LIMIT = 1024 * 1024;

/**
 * Reads an opened file through the chunker: in one piece when small (cut in place), else
 * streamed with at most 2 x the maximum chunk size buffered. Reads what the file holds now,
 * whatever its size was when walked.
 */
export async function chunkFile(fh: FileHandle, size: number, chunker: Chunker, storeChunk: (c: Uint8Array) => Promise<void>): Promise<void> {
  let position = 0;
  const read = async (into: Uint8Array, offset: number, length: number): Promise<number> => {
    const { bytesRead } = await fh.read(into, offset, length, position);
    position += bytesRead;
    return bytesRead;
  };
  if (size <= WHOLE_READ_LIMIT) {
    // One read of size + 1 bytes tells whether the file grew since the walk.
    const buf = new Uint8Array(size + 1);
    let n = 0;
    while (n < buf.length) {
      const got = await read(buf, n, buf.length - n);
      if (got === 0) break;
      n += got;
    }
    if (n <= size) {
      for (let at = 0; at < n; ) {
        const len = chunker.cut(buf, at, n);
        await storeChunk(buf.slice(at, at + len));
        at += len;
      }
      release(buf);
      return;
    }
    position = 0; // it grew: stream it from the start
  }
  for await (const chunk of chunkStream(read, chunker)) await storeChunk(chunk);
}

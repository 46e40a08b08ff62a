import { randomUUID } from 'node:crypto';
import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngineError } from './errors.ts';

const ID = 32;
const BLOCK = 64 * 1024;
const PER_BLOCK = BLOCK / ID;

/** Closes a store's temp file once the store is collected (a table held by no one). */
const closer = new FinalizationRegistry<{ fd: number }>((file) => {
  if (file.fd >= 0) closeSync(file.fd);
  file.fd = -1;
});

/**
 * The full 32-byte ids of a blob table, by entry number (the order they were added), in 64 KiB
 * blocks. The first blocks, up to `inMemory` bytes, stay in memory; each block past them that
 * fills is written to a temp file (created in the system's temp directory and unlinked at once:
 * it goes with the process) and read back 32 bytes at a time (from the page cache as a rule), so
 * memory keeps one block of those; a block that cannot be written (no temp directory, a full
 * disk) stays in memory instead.
 */
export class IdStore {
  private readonly blocks: (Buffer | null)[] = [];
  private count = 0;
  /** The first block written to the temp file when full (Infinity: none is). */
  private spillFrom: number;
  private readonly file = { fd: -1 };
  private spare: Buffer | null = null;
  private readonly scratch = Buffer.alloc(ID);

  constructor(inMemory: number) {
    this.spillFrom = Math.ceil(inMemory / BLOCK);
  }

  /** Bytes of ids held in memory. */
  get residentBytes(): number {
    let n = 0;
    for (const b of this.blocks) if (b) n += b.length;
    return n;
  }

  /** Stores an id; returns its entry number. */
  append(id: Uint8Array): number {
    const n = this.count++;
    const at = (n % PER_BLOCK) * ID;
    if (at === 0) {
      this.blocks.push(this.spare ?? Buffer.allocUnsafeSlow(BLOCK));
      this.spare = null;
    }
    const b = this.blocks.length - 1;
    const block = this.blocks[b]!;
    block.set(id.length === ID ? id : id.subarray(0, ID), at); // no view per id: a backup adds one per blob
    if (at + ID === BLOCK && b >= this.spillFrom && this.write(block, b * BLOCK)) {
      this.blocks[b] = null;
      this.spare = block;
    }
    return n;
  }

  /** Copies the id of an entry into `into` at `at`. */
  read(entry: number, into: Uint8Array, at = 0): void {
    const block = this.blocks[Math.floor(entry / PER_BLOCK)];
    if (block) {
      const from = (entry % PER_BLOCK) * ID;
      block.copy(into, at, from, from + ID);
      return;
    }
    let done = 0;
    while (done < ID) {
      const n = readSync(this.file.fd, into, at + done, ID - done, entry * ID + done);
      if (n === 0) throw new EngineError('INTERNAL_ERROR', 'the temp file of blob ids is shorter than written');
      done += n;
    }
  }

  /** Whether an entry's id is `id`. */
  equals(entry: number, id: Uint8Array): boolean {
    const block = this.blocks[Math.floor(entry / PER_BLOCK)];
    let buf: Uint8Array;
    let from = 0;
    if (block) {
      buf = block;
      from = (entry % PER_BLOCK) * ID;
    } else {
      this.read(entry, this.scratch);
      buf = this.scratch;
    }
    for (let i = 0; i < ID; i++) if (buf[from + i] !== id[i]) return false;
    return true;
  }

  /** Writes a full block at its place in the temp file (opened on first use); false when it cannot. */
  private write(block: Buffer, position: number): boolean {
    try {
      if (this.file.fd < 0) {
        const path = join(tmpdir(), `.blob-ids-${randomUUID()}`);
        const fd = openSync(path, 'wx+', 0o600);
        try {
          unlinkSync(path);
        } catch (err) {
          closeSync(fd);
          throw err;
        }
        this.file.fd = fd;
        closer.register(this, this.file);
      }
      for (let done = 0; done < block.length; ) done += writeSync(this.file.fd, block, done, block.length - done, position + done);
      return true;
    } catch {
      this.spillFrom = Infinity; // kept in memory from here on
      return false;
    }
  }
}

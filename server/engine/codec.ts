import { EngineError } from './errors.ts';

/**
 * Little binary encoding for trees, index files and pack headers: unsigned LEB128 varints (up to
 * 2^53), fixed 64-bit integers, and length-prefixed byte strings. The reader throws CORRUPT_DATA
 * on anything that runs past the end, so a damaged object never decodes into nonsense.
 */
export class ByteWriter {
  private buf: Buffer;
  /** Over `buf`: its 64-bit writes take a bigint as it is (Buffer's make several intermediate bigints per number). */
  private view: DataView;
  private at = 0;

  constructor(size = 4096) {
    this.buf = Buffer.allocUnsafe(size);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  }

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }

  u8(v: number): void {
    this.room(1);
    this.buf[this.at++] = v;
  }

  varint(v: number): void {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`not a varint: ${v}`);
    this.room(8);
    while (v >= 0x80) {
      this.buf[this.at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.at++] = v;
  }

  i64(v: bigint): void {
    this.room(8);
    this.view.setBigInt64(this.at, v, true);
    this.at += 8;
  }

  u64(v: bigint): void {
    this.room(8);
    this.view.setBigUint64(this.at, v, true);
    this.at += 8;
  }

  /** Bytes of a known length (ids, hashes). */
  raw(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.at);
    this.at += b.length;
  }

  /** Length-prefixed bytes (names, link targets). */
  bytes(b: Uint8Array): void {
    this.varint(b.length);
    this.raw(b);
  }

  /** Length-prefixed bytes given as a latin1 string (one character per byte). */
  latin1(s: string): void {
    this.varint(s.length);
    this.room(s.length);
    this.at += this.buf.write(s, this.at, 'latin1');
  }

  /** The bytes written, in a buffer of their own. */
  finish(): Uint8Array {
    return new Uint8Array(this.buf.buffer.slice(this.buf.byteOffset, this.buf.byteOffset + this.at));
  }
}

/**
 * A varint (7 bits a byte, low bits first, at most 8 bytes) from a reader's successive bytes;
 * null when it does not end within 8. The reader itself, not a closure: no allocation per number.
 */
export function readVarint(reader: { u8(): number }): number | null {
  let v = 0;
  let scale = 1;
  for (let i = 0; i < 8; i++) {
    const b = reader.u8();
    v += (b & 0x7f) * scale;
    if (b < 0x80) return v;
    scale *= 0x80;
  }
  return null;
}

export class ByteReader {
  private readonly buf: Buffer;
  private at = 0;
  private readonly what: string;

  constructor(data: Uint8Array, what: string) {
    this.buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    this.what = what;
  }

  private need(n: number): void {
    if (this.at + n > this.buf.length) throw new EngineError('CORRUPT_DATA', `${this.what} is truncated`, { object: this.what });
  }

  get done(): boolean {
    return this.at === this.buf.length;
  }

  u8(): number {
    this.need(1);
    return this.buf[this.at++]!;
  }

  varint(): number {
    const v = readVarint(this);
    if (v === null) throw new EngineError('CORRUPT_DATA', `${this.what} holds a bad number`, { object: this.what });
    return v;
  }

  i64(): bigint {
    this.need(8);
    const v = this.buf.readBigInt64LE(this.at);
    this.at += 8;
    return v;
  }

  u64(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64LE(this.at);
    this.at += 8;
    return v;
  }

  /** A copy of the next `n` bytes (never a view that would keep the whole object alive). */
  raw(n: number): Uint8Array {
    this.need(n);
    const out = new Uint8Array(n);
    out.set(this.buf.subarray(this.at, this.at + n));
    this.at += n;
    return out;
  }

  bytes(): Uint8Array {
    return this.raw(this.varint());
  }

  /** The next `n` bytes as a view into the data (for a caller that copies what it keeps). */
  view(n: number): Uint8Array {
    this.need(n);
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}

export function toHex(id: Uint8Array): string {
  return Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString('hex');
}

export function fromHex(hex: string): Uint8Array {
  return new Uint8Array(Buffer.from(hex, 'hex'));
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

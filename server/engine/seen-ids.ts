/**
 * The chunk ids one backup's threads have encoded so far, in one table they all share (a
 * SharedArrayBuffer the pool hands each worker). A chunk whose id is there was compressed and
 * encrypted before in this backup: its thread hands back the plaintext instead (`seen` on the
 * EncodedBlob), and the blob writer drops it once it finds the first copy pending or stored, as
 * restic checks its index before it compresses. A real tree repeats itself (the project's
 * node_modules: 196 of its 872 MB are copies of other files), and each copy was encoded only to
 * be dropped.
 *
 * The table holds 64-bit fingerprints (an id's first 8 bytes), each set once with a
 * compare-and-swap. A fingerprint found is only a hint: the writer still checks the whole id,
 * and encodes the chunk after all when the first copy is not there yet (another thread is still
 * encoding it) or the fingerprint was another id's. A crowded table stops taking new ids (a
 * lookup gives up after PROBES slots), so it never grows: 2 MiB a backup.
 */
const SEEN_SLOTS = 1 << 18;
const PROBES = 32;

export class SeenIds {
  private readonly slots: BigInt64Array;

  constructor(shared: SharedArrayBuffer) {
    this.slots = new BigInt64Array(shared);
  }

  /** A table for a new backup, to share with its workers. */
  static table(): SharedArrayBuffer {
    return new SharedArrayBuffer(SEEN_SLOTS * 8);
  }

  /** Whether `id` (32 bytes) was marked before; marks it when it was not (and the table has room). */
  mark(id: Uint8Array): boolean {
    const view = new DataView(id.buffer, id.byteOffset, 8);
    const fingerprint = view.getBigInt64(0, true) || 1n; // 0 marks an empty slot
    const mask = this.slots.length - 1;
    let at = view.getUint32(0, true) & mask;
    for (let probe = 0; probe < PROBES; probe++) {
      const was = Atomics.compareExchange(this.slots, at, 0n, fingerprint);
      if (was === 0n) return false;
      if (was === fingerprint) return true;
      at = (at + 1) & mask;
    }
    return false;
  }
}

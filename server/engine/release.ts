/**
 * Frees a large buffer's memory now instead of at the next garbage collection: V8 collects
 * ArrayBuffers late (after tens of MB of external allocations per thread), which would let
 * a backup's resident memory grow to several times its working set. Only views that own
 * their whole, non-pooled buffer are released (or, with `wholeBuffer`, a view at the start
 * of a buffer known to be private, such as a zlib output); the view is unusable afterwards.
 */
export function release(view: Uint8Array, wholeBuffer = false): void {
  const buffer = view.buffer;
  const owned = view.byteOffset === 0 && (wholeBuffer || view.byteLength === buffer.byteLength);
  if (buffer instanceof ArrayBuffer && owned && buffer.byteLength > Math.max(65536, Buffer.poolSize) && !buffer.detached) {
    buffer.transfer(0);
  }
}

/**
 * Like release, for a view known to start a private buffer, whatever its size: one
 * transferred from another thread, or allocated fresh by crypto or by zlib (with a chunk
 * size of at least 4 KiB, so never from Buffer's shared pool). Pool-sized buffers are
 * skipped all the same, to be safe.
 */
export function releasePrivate(view: Uint8Array): void {
  const buffer = view.buffer;
  if (buffer instanceof ArrayBuffer && view.byteOffset === 0 && buffer.byteLength !== Buffer.poolSize && !buffer.detached) buffer.transfer(0);
}

/** A view that owns its whole ArrayBuffer, as is (transferable to another thread); anything else (a pooled Buffer's slice) copied. */
export function owned(data: Uint8Array): Uint8Array {
  return data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer ? data : new Uint8Array(data);
}

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

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

let gcMinor: (() => void) | null | undefined;

/**
 * A young-generation collection every `every` bytes of buffers handled: what release()
 * cannot reach (buffers allocated inside zlib and crypto calls) is freed within a few MB
 * rather than after the ~100 MB V8 lets pile up per thread. Uses V8's gc hook, enabled
 * at run time; without it this does nothing.
 */
export function collector(every: number, everyItems = 1024): (bytes: number) => void {
  if (gcMinor === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as (opts: { type: 'minor' | 'major' }) => void;
      gcMinor = () => gc({ type: 'minor' });
    } catch {
      gcMinor = null;
    }
  }
  let since = 0;
  let items = 0;
  return (bytes) => {
    since += bytes;
    if (since >= every || ++items >= everyItems) {
      since = 0;
      items = 0;
      gcMinor?.();
    }
  };
}

/** Like release, for a view known to own a private buffer (one transferred from another thread): any size. */
export function releasePrivate(view: Uint8Array): void {
  const buffer = view.buffer;
  if (buffer instanceof ArrayBuffer && !buffer.detached) buffer.transfer(0);
}

import { StorageFullError, StorageUnavailableError } from './storage/errors.ts';

/**
 * Every failure the engine reports carries a stable code: SOURCE_NOT_FOUND, SOURCE_UNREADABLE,
 * SNAPSHOT_NOT_FOUND, PATH_NOT_FOUND, RESTORE_CONFLICT, CORRUPT_DATA, CANCELLED, WRONG_KEY,
 * WRONG_PASSWORD, KEY_FILE_UNREADABLE, NOT_A_REPOSITORY, UNSUPPORTED_FORMAT, REPOSITORY_CLOSED,
 * REPOSITORY_BUSY, LOCK_LOST,
 * STORAGE_FULL, DESTINATION_UNAVAILABLE, STORAGE_ERROR, INTERNAL_ERROR.
 */
export class EngineError extends Error {
  code: string;
  details: Record<string, unknown>;

  constructor(code: string, message: string, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EngineError';
    this.code = code;
    this.details = details;
  }
}

export function cancelled(): EngineError {
  return new EngineError('CANCELLED', 'the operation was cancelled');
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw cancelled();
}

export function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** A system error as a worker posts it (errors do not cross threads with their code). */
export interface PostedErrno {
  code: string;
  message: string;
  errno: true;
}

export function postedErrno(err: unknown): PostedErrno {
  return { code: errnoCode(err) ?? 'EIO', message: (err as Error).message, errno: true };
}

/** Why a blob did not decode, as posted between threads (anything but an EngineError counts as corrupt data). */
export function postedDecodeFailure(err: unknown): { code: string; message: string } {
  const e = err instanceof EngineError ? err : new EngineError('CORRUPT_DATA', String(err));
  return { code: e.code, message: e.message };
}

/** The error a worker posted, as the system error it was (its `code` kept). */
export function fromPostedErrno(error: { code: string; message: string }): Error {
  return Object.assign(new Error(error.message), { code: error.code });
}

/** A promise kept to be settled later: its failure is read then, not reported as unhandled meanwhile. */
export function observed<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

/**
 * Calls `fn` once `signal` aborts; returns the function that forgets it. One listener per signal
 * holds a set of callbacks: an EventTarget's listener list is scanned on every add and remove, so
 * a listener per pending wait made thousands of waits (a restore's small files in flight) cost
 * time quadratic in their number.
 */
export function whenAborted(signal: AbortSignal, fn: () => void): () => void {
  let set = waiting.get(signal);
  if (!set) {
    const callbacks = new Set<() => void>();
    signal.addEventListener(
      'abort',
      () => {
        for (const f of callbacks) f();
        callbacks.clear();
      },
      { once: true },
    );
    waiting.set(signal, callbacks);
    set = callbacks;
  }
  set.add(fn);
  const callbacks = set;
  return () => callbacks.delete(fn);
}
const waiting = new WeakMap<AbortSignal, Set<() => void>>();

/** Waits for `promise`, or rejects with CANCELLED as soon as the signal aborts (the promise is left to settle on its own). */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(cancelled());
  }
  return new Promise<T>((resolve, reject) => {
    const forget = whenAborted(signal, () => reject(cancelled()));
    promise.then(
      (v) => {
        forget();
        resolve(v);
      },
      (e: unknown) => {
        forget();
        reject(e);
      },
    );
  });
}

/** The storage's own failures in the engine's vocabulary; anything else is returned unchanged. */
export function fromStorage(err: unknown): unknown {
  if (err instanceof EngineError) return err;
  if (err instanceof StorageFullError) return new EngineError('STORAGE_FULL', 'the repository storage is full', {}, { cause: err });
  if (err instanceof StorageUnavailableError) {
    return new EngineError('DESTINATION_UNAVAILABLE', `the repository storage cannot be used: ${err.message}`, {}, { cause: err });
  }
  return err;
}

/** Filesystem errors of a restore target that fail the whole job (the rest become warnings). */
export function fromTargetFs(err: unknown): unknown {
  const code = errnoCode(err);
  if (code === 'ENOSPC' || code === 'EDQUOT') return new EngineError('STORAGE_FULL', 'no space is left on the restore target', {}, { cause: err });
  if (code === 'EROFS') return new EngineError('RESTORE_CONFLICT', 'the restore target is read-only', {}, { cause: err });
  return err;
}

/**
 * Runs an operation so that a cancel is answered within seconds whatever it is blocked on: when
 * the signal aborts, `stop` is called (it terminates workers and the like), the operation gets
 * `grace` ms to wind down (remove its temp files), and CANCELLED is thrown even if it has not.
 */
export async function cancellable<T>(signal: AbortSignal | undefined, stop: () => void, run: () => Promise<T>, grace = 3000): Promise<T> {
  throwIfAborted(signal);
  const work = run();
  if (!signal) return work;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => {
      stop();
      const timer = setTimeout(() => reject(cancelled()), grace);
      work.then(
        () => {
          clearTimeout(timer);
          reject(cancelled());
        },
        () => {
          clearTimeout(timer);
          reject(cancelled());
        },
      );
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => {});
  try {
    return await Promise.race([work, aborted]);
  } catch (err) {
    if (signal.aborted) throw cancelled();
    throw err;
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

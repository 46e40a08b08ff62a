import { StoreError, StoreFullError, StoreUnavailableError } from '../errors.ts';

/** SQLSTATEs after which a retry may well succeed: the server is starting, stopping, overloaded or lost the connection. */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '53200', '40001', '40P01', '55P03']);
const DISK_FULL = '53100';
/** Socket failures on the way to the server. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/** What pg says, without a code, when a connection cannot be made or was lost. */
const LOST = /Connection terminated|timeout exceeded when trying to connect|not queryable|Cannot use a pool after calling end|Client was closed/;

/** A pg failure in the Store's terms; anything unrecognised is returned as it is (a bug). */
export function translate(err: unknown): unknown {
  if (err instanceof StoreError) return err;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code === DISK_FULL) return new StoreFullError('the database disk is full', { cause: err });
  if (code.startsWith('08') || UNAVAILABLE_STATES.has(code) || NETWORK_CODES.has(code) || LOST.test(String(e?.message ?? ''))) {
    return new StoreUnavailableError('the database cannot serve now', { cause: err });
  }
  return err;
}

import { pino, type Logger } from 'pino';
import type { Request, RequestHandler, Response } from 'express';
import { maybeAuthOf, requestIdOf } from './locals.ts';

/** Paths pino blanks out wherever they appear in a log object. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'secret',
  '*.secret',
  'password',
  '*.password',
  'token',
  '*.token',
  'access_token',
  '*.access_token',
  'accessToken',
  '*.accessToken',
  'api_secret',
  '*.api_secret',
];

let stdout: pino.DestinationStream | undefined;

export interface LogDestination extends pino.DestinationStream {
  /** Writes what is left and closes the file. */
  close(): void;
}

/**
 * A file descriptor or path for the log: the lines of one turn of the event loop are written
 * together, synchronously, at its end (one write instead of one per line), and whatever is left
 * when the process exits.
 */
export function batchedDestination(dest: number | string): LogDestination {
  const out = pino.destination({ dest, sync: true });
  let lines: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (lines.length === 0) return;
    const text = lines.join('');
    lines = [];
    out.write(text);
  };
  process.on('exit', flush);
  return {
    write(line: string) {
      lines.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    close() {
      flush();
      process.off('exit', flush);
      out.end();
    },
  };
}

/** Stdout, batched (one destination for every logger of the process). */
function batchedStdout(): pino.DestinationStream {
  stdout ??= batchedDestination(1);
  return stdout;
}

/**
 * The JSON logger, to stdout unless told otherwise. Lines are written synchronously (batchedStdout):
 * an exit never waits on lines still queued (pino's asynchronous mode would then write them in a
 * loop that never ends when stdout is a pipe nobody reads any more), and a closed stdout only
 * silences the log.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream | pino.DestinationStream): Logger {
  const options = { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { service: 'backup-service' } };
  return pino(options, (destination as pino.DestinationStream | undefined) ?? batchedStdout());
}

/** Told of every finished request with its duration in seconds (the HTTP metrics). */
export type FinishedRequest = (req: Request, res: Response, seconds: number) => void;

/**
 * One log line per request when the response finishes: method, path (no query string, which may
 * carry cursors or e-mail addresses), status, duration, request id and account. Never headers or bodies.
 * Successful requests to `quietPaths` (the health probes, asked every few seconds) log at debug.
 * `observe` is told of the same finish from the same listener and clock reads: one hook per
 * request for the log and the metrics.
 */
export function requestLogger(parent: Logger, quietPaths: ReadonlySet<string> = new Set(), observe?: FinishedRequest): RequestHandler {
  // The line below holds no field redaction could apply to, and redacting costs several times
  // the rest of writing a line: request lines skip it.
  const logger = parent.child({}, { redact: { paths: [] } });
  return (req, res, next) => {
    const started = performance.now();
    res.on('finish', () => {
      const ms = performance.now() - started;
      observe?.(req, res, ms / 1000);
      const status = res.statusCode;
      const line = {
        request_id: requestIdOf(res),
        method: req.method,
        path: req.path,
        status,
        duration_ms: Math.round(ms * 10) / 10,
        account: maybeAuthOf(res)?.accountId,
      };
      if (status >= 500) logger.error(line, 'request failed');
      else if (status < 400 && quietPaths.has(req.path)) logger.debug(line, 'request');
      else logger.info(line, 'request');
    });
    next();
  };
}

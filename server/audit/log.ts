/**
 * The audit log: one JSON line per security-relevant event, to a file (created 0600 in a 0700
 * directory, rotated by size: `audit.log` → `audit.log.1` … `.N`) or to stdout beside the
 * request log, told apart by `"log_type":"audit"`. docs/security.md lists the events.
 *
 * Every line has `log_type`, `time` (ISO 8601 UTC), `event`, `account_id` and `request_id`
 * (null where there is none), then the event's own fields: ids, addresses, paths and outcomes,
 * never a secret, a token or file content. Lines are written synchronously, so a line is in the
 * file (the kernel's page cache) before the work it records goes on.
 */
import { closeSync, fchmodSync, fstatSync, mkdirSync, openSync, renameSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../config-values.ts';
import type { AuditSettings } from './settings.ts';

/** Values an audit line may carry: no objects, so nothing can be dumped into it whole. */
export type AuditValue = string | number | boolean | null;

export interface AuditFields {
  account_id: string | null;
  request_id: string | null;
  [field: string]: AuditValue;
}

export interface AuditSink {
  write(line: string): void;
  close(): void;
}

/** Appends to a file, rotating it once it grows past maxBytes and keeping `keep` old ones. */
class RotatingFile implements AuditSink {
  private fd: number;
  private size: number;
  private readonly path: string;
  private readonly maxBytes: number;
  private readonly keep: number;

  constructor(path: string, maxBytes: number, keep: number) {
    this.path = path;
    this.maxBytes = maxBytes;
    this.keep = keep;
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    this.fd = this.open();
    this.size = fstatSync(this.fd).size;
  }

  private open(): number {
    const fd = openSync(this.path, 'a', 0o600);
    fchmodSync(fd, 0o600); // a file that existed with a looser mode is tightened
    return fd;
  }

  write(line: string): void {
    this.reopenIfMoved();
    this.size += writeSync(this.fd, line);
    if (this.size >= this.maxBytes) this.rotate();
  }

  /** Another process (the keys command, an operator's logrotate) moved the file away: follow the name. */
  private reopenIfMoved(): void {
    let current;
    try {
      current = statSync(this.path);
    } catch {
      current = null;
    }
    const open = fstatSync(this.fd);
    if (current && current.ino === open.ino && current.dev === open.dev) return;
    closeSync(this.fd);
    this.fd = this.open();
    this.size = fstatSync(this.fd).size;
  }

  private rotate(): void {
    closeSync(this.fd);
    for (let i = this.keep - 1; i >= 1; i--) {
      try {
        renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`);
      } catch {
        // that generation does not exist yet
      }
    }
    renameSync(this.path, `${this.path}.1`);
    this.fd = this.open();
    this.size = 0;
  }

  close(): void {
    closeSync(this.fd);
  }
}

const stdout: AuditSink = {
  write: (line) => void process.stdout.write(line),
  close: () => {},
};

export class AuditLog {
  private readonly sink: AuditSink;

  constructor(sink: AuditSink) {
    this.sink = sink;
  }

  /** Opens AUDIT_LOG (stdout when unset); a file that cannot be opened stops the start. */
  static open(settings: AuditSettings): AuditLog {
    if (!settings.file) return new AuditLog(stdout);
    try {
      return new AuditLog(new RotatingFile(settings.file, settings.maxBytes, settings.keep));
    } catch (err) {
      throw new ConfigError(`AUDIT_LOG cannot be opened for appending: ${settings.file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  }

  record(event: string, fields: AuditFields): void {
    const line = { log_type: 'audit', time: new Date().toISOString(), event, ...fields };
    this.sink.write(`${JSON.stringify(line)}\n`);
  }

  close(): void {
    this.sink.close();
  }
}

import { isAbsolute, resolve } from 'node:path';
import { parseInt10 } from '../config-values.ts';

/** Where the audit log goes: a file (0600, rotated by size) or stdout beside the request log. */
export interface AuditSettings {
  /** AUDIT_LOG: a file path (resolved against the working directory), or null for stdout (unset, `-` or `stdout`). */
  file: string | null;
  /** AUDIT_LOG_MAX_BYTES, default 10 MiB: the file is rotated once it grows past this. */
  maxBytes: number;
  /** AUDIT_LOG_KEEP, default 5: rotated files kept beside the live one (`audit.log.1` … `.5`). */
  keep: number;
}

export function loadAuditSettings(env: NodeJS.ProcessEnv, cwd: string): AuditSettings {
  const raw = env.AUDIT_LOG?.trim() ?? '';
  const file = raw === '' || raw === '-' || raw === 'stdout' ? null : isAbsolute(raw) ? raw : resolve(cwd, raw);
  return {
    file,
    maxBytes: parseInt10('AUDIT_LOG_MAX_BYTES', env.AUDIT_LOG_MAX_BYTES, 10 * 1024 * 1024, 4096, 2 ** 40),
    keep: parseInt10('AUDIT_LOG_KEEP', env.AUDIT_LOG_KEEP, 5, 1, 100),
  };
}

import { AuditLog } from './log.ts';
import { loadAuditSettings } from './settings.ts';

/** Variables whose values may be secrets (keys, passwords, URLs with credentials). */
const SECRET_NAME = /SECRET|PASSWORD|PASSPHRASE|TOKEN|KEY|CREDENTIAL|_URL$/;

/** The message with every secret-looking variable's value, and URL credentials, blanked out. */
export function scrubSecrets(message: string, env: NodeJS.ProcessEnv): string {
  let out = message.replace(/(\w+:\/\/)[^\s/@"]*@/g, '$1[redacted]@');
  for (const [name, value] of Object.entries(env)) {
    if (value && value.length >= 4 && SECRET_NAME.test(name)) out = out.split(value).join('[redacted]');
  }
  return out;
}

/**
 * The `settings.refused` audit line, written when a bad setting stops the start. The audit log
 * settings may be what is wrong, so this falls back to stdout; it never throws.
 */
export function auditRefusedSettings(message: string, env: NodeJS.ProcessEnv, cwd: string): void {
  let audit: AuditLog;
  try {
    audit = AuditLog.open(loadAuditSettings(env, cwd));
  } catch {
    audit = AuditLog.open({ file: null, maxBytes: 0, keep: 0 });
  }
  try {
    // The variable the message starts with ("PORT must be…"), else the first one it names.
    const setting = (/^[A-Z][A-Z0-9_]+\b/.exec(message) ?? /\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/.exec(message))?.[0] ?? null;
    audit.record('settings.refused', { account_id: null, request_id: null, setting, message: scrubSecrets(message, env) });
  } catch {
    // the process is stopping with the message on stderr anyway
  } finally {
    audit.close();
  }
}

import { homedir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { ConfigError } from '../config-values.ts';

/** Where a shared secret comes from: the environment (the key itself) or a key file (created on first start). */
export type KeySource = { kind: 'env'; name: string; key: Buffer } | { kind: 'file'; name: string; file: string };

export interface KeySettings {
  /** MASTER_KEY, else MASTER_KEY_FILE (default: $XDG_CONFIG_HOME or ~/.config, backup-service/master.key). */
  master: KeySource;
  /** TOKEN_SIGNING_KEY, else TOKEN_SIGNING_KEY_FILE (default: DATA_DIR/secrets/token-signing-key). */
  tokenSigning: KeySource;
  /** BACKUP_REPOSITORY_PASSWORD: 1.0.0's repository password, read only to migrate the repositories it keyed. */
  legacyRepositoryPassword: string | undefined;
}

const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

function source(env: NodeJS.ProcessEnv, keyVar: string, fileVar: string, defaultFile: string, cwd: string, minBytes: number, maxBytes: number): KeySource {
  const raw = env[keyVar]?.trim();
  const file = env[fileVar]?.trim();
  if (raw && file) throw new ConfigError(`set ${keyVar} or ${fileVar}, not both`);
  if (raw) {
    const key = Buffer.from(raw, 'base64');
    if (!BASE64.test(raw) || key.length < minBytes || key.length > maxBytes) {
      const size = minBytes === maxBytes ? `${minBytes} bytes` : `at least ${minBytes} bytes`;
      throw new ConfigError(`${keyVar} must be ${size} in base64 (for example the output of \`openssl rand -base64 ${minBytes}\`)`);
    }
    return { kind: 'env', name: keyVar, key };
  }
  return { kind: 'file', name: fileVar, file: file ? resolve(cwd, file) : defaultFile };
}

export function loadKeySettings(env: NodeJS.ProcessEnv, dataDir: string, cwd: string): KeySettings {
  const configHome = env.XDG_CONFIG_HOME?.trim() || join(homedir(), '.config');
  const master = source(env, 'MASTER_KEY', 'MASTER_KEY_FILE', join(resolve(cwd, configHome), 'backup-service', 'master.key'), cwd, 32, 32);
  // The master key never lives with the data: a copy of DATA_DIR must not be enough to read backups.
  if (master.kind === 'file' && inside(dataDir, master.file)) {
    throw new ConfigError(`MASTER_KEY_FILE must lie outside DATA_DIR (${dataDir}); it is ${master.file}`);
  }
  return {
    master,
    tokenSigning: source(env, 'TOKEN_SIGNING_KEY', 'TOKEN_SIGNING_KEY_FILE', join(dataDir, 'secrets', 'token-signing-key'), cwd, 32, 512),
    legacyRepositoryPassword: env.BACKUP_REPOSITORY_PASSWORD || undefined,
  };
}

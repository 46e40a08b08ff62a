import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { S3Connection } from '../engine/storage/s3.ts';

export type DestinationKind = 'local' | 's3';

/** One named repository location; each account's repository lies under it at `<account id>/<name>`. */
export type DestinationSettings =
  | { name: string; kind: 'local'; /** absolute directory */ path: string }
  | { name: string; kind: 's3'; bucket: string; /** '' or a clean key prefix without slashes at the ends */ prefix: string; connection: S3Connection };

/** The Destination schema's pattern. */
const NAME = /^[a-z][a-z0-9-]{0,31}$/;
const BUCKET = /^[A-Za-z0-9][A-Za-z0-9._-]{1,253}[A-Za-z0-9]$/;
const REGION = /^[A-Za-z0-9-]{1,64}$/;
const FILE_FIELDS: Record<DestinationKind, readonly string[]> = {
  local: ['kind', 'path'],
  s3: ['kind', 'bucket', 'prefix', 'region', 'endpoint', 'force_path_style', 'profile'],
};

/**
 * The destinations a backup may name: `local` and `cloud` out of the box (directories under
 * DATA_DIR/repositories); `cloud` in a bucket when CLOUD_S3_BUCKET is set (CLOUD_S3_PREFIX,
 * CLOUD_S3_FORCE_PATH_STYLE; region, endpoint and credentials from the SDK's AWS_* variables);
 * and more, or these redefined, in DESTINATIONS_FILE (JSON or YAML). A bad value throws an error
 * naming the variable, or the file and the field (a ConfigError once loadConfig has it).
 */
export function loadDestinations(env: NodeJS.ProcessEnv, dataDir: string): DestinationSettings[] {
  const underDataDir = join(dataDir, 'repositories');
  const byName = new Map<string, DestinationSettings>([
    ['local', { name: 'local', kind: 'local', path: underDataDir }],
    ['cloud', cloudFromEnv(env) ?? { name: 'cloud', kind: 'local', path: underDataDir }],
  ]);
  const file = env.DESTINATIONS_FILE?.trim();
  if (file) {
    for (const d of readDestinationsFile(file, underDataDir)) {
      if (d.name === 'cloud' && env.CLOUD_S3_BUCKET?.trim()) {
        throw new Error(`DESTINATIONS_FILE (${file}) defines cloud, which CLOUD_S3_BUCKET also defines; keep one`);
      }
      byName.set(d.name, d);
    }
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
}

function cloudFromEnv(env: NodeJS.ProcessEnv): DestinationSettings | null {
  const bucket = env.CLOUD_S3_BUCKET?.trim();
  if (!bucket) {
    for (const name of ['CLOUD_S3_PREFIX', 'CLOUD_S3_FORCE_PATH_STYLE']) {
      if (env[name]?.trim()) throw new Error(`${name} is set but CLOUD_S3_BUCKET is not; set the bucket to put cloud in object storage`);
    }
    return null;
  }
  if (!BUCKET.test(bucket)) throw new Error(`CLOUD_S3_BUCKET must be a bucket name (3-255 of A-Z a-z 0-9 . _ -), got "${bucket}"`);
  return {
    name: 'cloud',
    kind: 's3',
    bucket,
    prefix: keyPrefix('CLOUD_S3_PREFIX', env.CLOUD_S3_PREFIX),
    connection: { forcePathStyle: bool('CLOUD_S3_FORCE_PATH_STYLE', env.CLOUD_S3_FORCE_PATH_STYLE ?? 'false') },
  };
}

function readDestinationsFile(file: string, underDataDir: string): DestinationSettings[] {
  const where = `DESTINATIONS_FILE (${file})`;
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8')); // YAML 1.2 reads JSON too
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message.split('\n')[0]}`);
  }
  const destinations = isObject(doc) ? doc.destinations : undefined;
  if (!isObject(doc) || Object.keys(doc).some((k) => k !== 'destinations') || !isObject(destinations)) {
    throw new Error(`${where} must hold one object, "destinations", mapping names to { kind: local | s3, … }`);
  }
  return Object.entries(destinations).map(([name, raw]) => {
    const at = `${where}: destinations.${name}`;
    if (!NAME.test(name)) throw new Error(`${at}: a name is 1-32 of a-z 0-9 - starting with a letter`);
    if (!isObject(raw) || (raw.kind !== 'local' && raw.kind !== 's3')) throw new Error(`${at}.kind must be local or s3`);
    const unknown = Object.keys(raw).filter((k) => !FILE_FIELDS[raw.kind as DestinationKind].includes(k));
    if (unknown.length) throw new Error(`${at}: unknown field ${unknown.join(', ')} (a ${raw.kind} destination takes ${FILE_FIELDS[raw.kind as DestinationKind].join(', ')})`);
    const text = (field: string): string | undefined => {
      const v = raw[field];
      if (v === undefined || v === null) return undefined;
      if (typeof v !== 'string' || v.trim() === '') throw new Error(`${at}.${field} must be a non-empty string`);
      return v.trim();
    };
    if (raw.kind === 'local') {
      const path = text('path') ?? underDataDir;
      if (!isAbsolute(path)) throw new Error(`${at}.path must be an absolute path, got "${path}"`);
      return { name, kind: 'local', path };
    }
    const bucket = text('bucket');
    if (!bucket || !BUCKET.test(bucket)) throw new Error(`${at}.bucket must be a bucket name (3-255 of A-Z a-z 0-9 . _ -)`);
    const region = text('region');
    if (region !== undefined && !REGION.test(region)) throw new Error(`${at}.region must be a region name, got "${region}"`);
    const endpoint = text('endpoint');
    if (endpoint !== undefined && !/^https?:$/.test(safeUrl(endpoint)?.protocol ?? '')) throw new Error(`${at}.endpoint must be an http(s) URL, got "${endpoint}"`);
    const pathStyle = raw.force_path_style;
    if (pathStyle !== undefined && typeof pathStyle !== 'boolean') throw new Error(`${at}.force_path_style must be true or false`);
    const profile = text('profile');
    return {
      name,
      kind: 's3',
      bucket,
      prefix: keyPrefix(`${at}.prefix`, text('prefix')),
      connection: { forcePathStyle: pathStyle ?? false, ...(region ? { region } : {}), ...(endpoint ? { endpoint } : {}), ...(profile ? { profile } : {}) },
    };
  });
}

function keyPrefix(name: string, raw: string | undefined): string {
  const prefix = (raw ?? '').trim().replace(/^\/+|\/+$/g, '');
  if (prefix !== '' && prefix.split('/').some((p) => p === '' || p === '.' || p === '..' || p.includes('\0'))) {
    throw new Error(`${name} must be a key prefix like "backups" or "team/backups" (no empty, . or .. segments), got "${raw}"`);
  }
  return prefix;
}

function bool(name: string, raw: string): boolean {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['', '0', 'false', 'no', 'off'].includes(v)) return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function safeUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

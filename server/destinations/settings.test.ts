import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.ts';
import { Destinations } from './registry.ts';
import { loadDestinations } from './settings.ts';

const dir = mkdtempSync(join(tmpdir(), 'destinations-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const dataDir = '/var/lib/backup';

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('destinations from configuration', () => {
  it('has cloud and local on local disk under DATA_DIR out of the box', () => {
    expect(loadDestinations({}, dataDir)).toEqual([
      { name: 'cloud', kind: 'local', path: '/var/lib/backup/repositories' },
      { name: 'local', kind: 'local', path: '/var/lib/backup/repositories' },
    ]);
  });

  it('puts cloud in a bucket with CLOUD_S3_BUCKET, leaving region, endpoint and credentials to the SDK', () => {
    const env = { CLOUD_S3_BUCKET: 'acme-backups', CLOUD_S3_PREFIX: '/service/prod/', CLOUD_S3_FORCE_PATH_STYLE: 'true', AWS_REGION: 'eu-west-1' };
    expect(loadDestinations(env, dataDir)[0]).toEqual({ name: 'cloud', kind: 's3', bucket: 'acme-backups', prefix: 'service/prod', connection: { forcePathStyle: true } });
    expect(loadDestinations({ CLOUD_S3_BUCKET: 'acme-backups' }, dataDir)[0]).toMatchObject({ prefix: '', connection: { forcePathStyle: false } });
  });

  it('reads more destinations, or redefined ones, from a YAML or JSON file', () => {
    const yaml = file('d.yaml', `destinations:
  archive:
    kind: local
    path: /srv/archive
  offsite:
    kind: s3
    bucket: team-offsite
    prefix: backups
    region: auto
    endpoint: https://example.r2.cloudflarestorage.com
    profile: r2
  local:
    kind: local
    path: /mnt/second-disk
`);
    const all = loadDestinations({ DESTINATIONS_FILE: yaml }, dataDir);
    expect(all.map((d) => d.name)).toEqual(['archive', 'cloud', 'local', 'offsite']);
    expect(all.find((d) => d.name === 'local')).toEqual({ name: 'local', kind: 'local', path: '/mnt/second-disk' });
    expect(all.find((d) => d.name === 'offsite')).toEqual({
      name: 'offsite',
      kind: 's3',
      bucket: 'team-offsite',
      prefix: 'backups',
      connection: { forcePathStyle: false, region: 'auto', endpoint: 'https://example.r2.cloudflarestorage.com', profile: 'r2' },
    });
    const json = file('d.json', JSON.stringify({ destinations: { cloud: { kind: 's3', bucket: 'b-1', force_path_style: true } } }));
    expect(loadDestinations({ DESTINATIONS_FILE: json }, dataDir)[0]).toMatchObject({ name: 'cloud', kind: 's3', connection: { forcePathStyle: true } });
  });

  it.each([
    [{ CLOUD_S3_PREFIX: 'x' }, /CLOUD_S3_PREFIX is set but CLOUD_S3_BUCKET is not/],
    [{ CLOUD_S3_BUCKET: 'b', AWS_REGION: 'x' }, /CLOUD_S3_BUCKET must be a bucket name/],
    [{ CLOUD_S3_BUCKET: 'bucket', CLOUD_S3_FORCE_PATH_STYLE: 'maybe' }, /CLOUD_S3_FORCE_PATH_STYLE must be true or false/],
    [{ CLOUD_S3_BUCKET: 'bucket', CLOUD_S3_PREFIX: 'a/../b' }, /CLOUD_S3_PREFIX must be a key prefix/],
    [{ DESTINATIONS_FILE: join(dir, 'missing.yaml') }, /DESTINATIONS_FILE \(.*missing\.yaml\): ENOENT/],
    [{ DESTINATIONS_FILE: 'bad-yaml' }, /DESTINATIONS_FILE \(.*\): /],
    [{ DESTINATIONS_FILE: 'list' }, /must hold one object, "destinations"/],
    [{ DESTINATIONS_FILE: 'kind' }, /destinations\.archive\.kind must be local or s3/],
    [{ DESTINATIONS_FILE: 'name' }, /destinations\.Archive: a name is 1-32 of a-z 0-9/],
    [{ DESTINATIONS_FILE: 'field' }, /destinations\.archive: unknown field bucket \(a local destination takes kind, path\)/],
    [{ DESTINATIONS_FILE: 'relative' }, /destinations\.archive\.path must be an absolute path/],
    [{ DESTINATIONS_FILE: 'endpoint' }, /destinations\.offsite\.endpoint must be an http\(s\) URL/],
    [{ DESTINATIONS_FILE: 'nobucket' }, /destinations\.offsite\.bucket must be a bucket name/],
    [{ DESTINATIONS_FILE: 'pathstyle' }, /destinations\.offsite\.force_path_style must be true or false/],
    [{ DESTINATIONS_FILE: 'cloud', CLOUD_S3_BUCKET: 'bucket' }, /defines cloud, which CLOUD_S3_BUCKET also defines/],
  ])('refuses %o naming the problem', (env, message) => {
    const files: Record<string, string> = {
      'bad-yaml': 'destinations: [unclosed',
      list: '- a\n- b\n',
      kind: 'destinations:\n  archive:\n    kind: ftp\n',
      name: 'destinations:\n  Archive:\n    kind: local\n',
      field: 'destinations:\n  archive:\n    kind: local\n    bucket: x\n',
      relative: 'destinations:\n  archive:\n    kind: local\n    path: archive\n',
      endpoint: 'destinations:\n  offsite:\n    kind: s3\n    bucket: bucket\n    endpoint: ftp://host\n',
      nobucket: 'destinations:\n  offsite:\n    kind: s3\n',
      pathstyle: 'destinations:\n  offsite:\n    kind: s3\n    bucket: bucket\n    force_path_style: "yes"\n',
      cloud: 'destinations:\n  cloud:\n    kind: s3\n    bucket: other\n',
    };
    const name = (env as Record<string, string>).DESTINATIONS_FILE;
    const resolved = name && files[name] ? { ...env, DESTINATIONS_FILE: file(`${name}.yaml`, files[name]!) } : env;
    expect(() => loadDestinations(resolved, dataDir)).toThrow(message);
    expect(() => loadConfig({ ...resolved, DATA_DIR: dataDir })).toThrow(ConfigError);
  });

  it('stops `npm start` with exit 78 when the object store has no region', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: join(dir, 'data'), PORT: '0', CLOUD_S3_BUCKET: 'acme', AWS_CONFIG_FILE: join(dir, 'none') };
    delete env.AWS_REGION;
    delete env.AWS_DEFAULT_REGION;
    const run = spawnSync(process.execPath, [join(import.meta.dirname, '..', 'main.ts')], { env, encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(78);
    expect(run.stderr).toContain('Configuration error: destination cloud (s3://acme) has no region: set AWS_REGION');
  });
});

describe('the destinations registry', () => {
  let destinations: Destinations;
  beforeAll(async () => {
    destinations = await Destinations.open(loadDestinations({ CLOUD_S3_BUCKET: 'acme', CLOUD_S3_PREFIX: 'prod', AWS_REGION: 'eu-west-1', DESTINATIONS_FILE: file('r.yaml', 'destinations:\n  archive:\n    kind: local\n    path: /srv/archive\n') }, dataDir));
  });
  afterAll(() => destinations.close());

  it('names each destination with its kind, nothing more', () => {
    expect(destinations.list()).toEqual([
      { name: 'archive', kind: 'local' },
      { name: 'cloud', kind: 's3' },
      { name: 'local', kind: 'local' },
    ]);
    expect(destinations.has('cloud') && !destinations.has('offsite')).toBe(true);
    expect(destinations.kindOf('offsite')).toBeNull();
    expect(destinations.hasObjectStore).toBe(true);
    expect(destinations.localRoots().sort()).toEqual(['/srv/archive', '/var/lib/backup/repositories']);
  });

  it('refuses at start an object store whose region the SDK cannot find', async () => {
    const saved = process.env.AWS_REGION;
    delete process.env.AWS_REGION;
    const without = await Destinations.open(loadDestinations({ CLOUD_S3_BUCKET: 'acme' }, dataDir));
    const withRegion = await Destinations.open(loadDestinations({ DESTINATIONS_FILE: file('region.yaml', 'destinations:\n  cloud:\n    kind: s3\n    bucket: acme\n    region: eu-west-1\n') }, dataDir));
    try {
      await expect(without.validate()).rejects.toThrow(ConfigError);
      await expect(without.validate()).rejects.toThrow(/destination cloud \(s3:\/\/acme\) has no region: set AWS_REGION/);
      await expect(withRegion.validate()).resolves.toBeUndefined();
    } finally {
      if (saved !== undefined) process.env.AWS_REGION = saved;
      without.close();
      withRegion.close();
    }
  });

  it('gives every account its own repository under the destination', () => {
    expect(destinations.backendFor('acc_01ABC', 'cloud').location).toBe('s3://acme/prod/acc_01ABC/cloud/');
    expect(destinations.backendFor('acc_01ABC', 'local').location).toBe('/var/lib/backup/repositories/acc_01ABC/local');
    expect(destinations.backendFor('acc_01ABC', 'archive').location).toBe('/srv/archive/acc_01ABC/archive');
    expect(() => destinations.backendFor('../x', 'cloud')).toThrow(/unexpected account id/);
    expect(() => destinations.backendFor('acc_01ABC', 'offsite')).toThrow(/no destination offsite/);
  });
});

import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_S3_LIMITS, frozenStoreBoundMs, type S3Limits } from '../engine/storage/s3-retry.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { startPostgres } from '../testing/services/postgres.ts';
import { startRgw, type Rgw } from '../testing/services/rgw.ts';
import { startS3Proxy, type S3Proxy } from '../testing/services/s3-proxy.ts';

/**
 * The service with `cloud` in a bucket of a real Ceph RADOS Gateway, through the API. `h` is
 * configured as the docs say (CLOUD_S3_* and the SDK's AWS_* variables); `faults` names its
 * destinations in a DESTINATIONS_FILE: `cloud` reached through a proxy (so a test stops or
 * freezes the gateway at an exact request), `badkey` with credentials the gateway refuses,
 * `nobucket` naming a bucket that does not exist; it runs with short store limits, so a hung
 * store costs seconds (the default limits' bound is checked in s3.test.ts).
 */
let rgw: Rgw;
let proxy: S3Proxy;
let h: Harness;
let faults: Harness;
const BUCKET = 'backups';
const MARKER = `plaintext-marker-${randomBytes(8).toString('hex')}`;
// Short enough that a hung store costs seconds, long enough that a busy 2-core machine's pauses are not taken for one.
const FAST: S3Limits = { connectTimeoutMs: 1000, idleTimeoutMs: 2500, attemptBaseMs: 30_000, minBytesPerSecond: 2 ** 20, attempts: 4, retryWindowMs: 5000, baseDelayMs: 50, maxDelayMs: 400 };

beforeAll(async () => {
  rgw = await startRgw();
  await rgw.createBucket(BUCKET);
  proxy = await startS3Proxy(rgw.endpoint);
  const { CLOUD_S3_BUCKET, CLOUD_S3_PREFIX, CLOUD_S3_FORCE_PATH_STYLE, ...aws } = rgw.env(BUCKET, 'service');
  Object.assign(process.env, aws); // the SDK reads AWS_* from the process environment itself
  h = await startHarness({ CLOUD_S3_BUCKET: CLOUD_S3_BUCKET!, CLOUD_S3_PREFIX: CLOUD_S3_PREFIX!, CLOUD_S3_FORCE_PATH_STYLE: CLOUD_S3_FORCE_PATH_STYLE! });
  writeFileSync(join(h.dir, 'credentials'), `[wrong]\naws_access_key_id = ${rgw.accessKeyId}\naws_secret_access_key = not-the-secret\n`);
  process.env.AWS_SHARED_CREDENTIALS_FILE = join(h.dir, 'credentials');
  const s3 = (bucket: string, extra = '') => `    kind: s3\n    bucket: ${bucket}\n    prefix: faults\n    force_path_style: true\n${extra}`;
  writeFileSync(
    join(h.dir, 'destinations.yaml'),
    `destinations:\n  cloud:\n${s3(BUCKET, `    endpoint: ${proxy.endpoint}\n`)}  badkey:\n${s3(BUCKET, '    profile: wrong\n')}  nobucket:\n${s3('no-such-bucket')}`,
  );
  faults = await startHarness({ DESTINATIONS_FILE: join(h.dir, 'destinations.yaml') }, { s3Limits: FAST });
});
afterAll(async () => {
  await faults?.cleanup();
  await h?.cleanup();
  await proxy?.close();
  await rgw?.cleanup();
});

/** A source with the marker in a small file, a few more small files and ~20 MiB of random bytes (two packs). */
function makeSource(root: string, name: string): string {
  const src = join(root, name);
  mkdirSync(join(src, 'docs'), { recursive: true });
  writeFileSync(join(src, 'docs', 'secret.txt'), `${MARKER}\n`.repeat(100));
  for (let i = 0; i < 20; i++) writeFileSync(join(src, 'docs', `note-${i}.md`), `note ${i} ${randomBytes(200).toString('hex')}\n`);
  writeFileSync(join(src, 'video.bin'), randomBytes(20 * 2 ** 20));
  return src;
}

function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(root, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out[relative(root, join(e.parentPath, e.name))] = readFileSync(join(e.parentPath, e.name)).toString('base64');
  }
  return out;
}

async function bucketObjects(prefix: string): Promise<{ key: string; body: Buffer }[]> {
  const client = rgw.client();
  const out: { key: string; body: Buffer }[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }));
    for (const o of page.Contents ?? []) {
      const res = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: o.Key! }));
      out.push({ key: o.Key!, body: Buffer.from(await res.Body!.transformToByteArray()) });
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  client.destroy();
  return out;
}

/** Starts a job (backup or restore) and waits for it to end; returns the job and the seconds it took. */
async function run(server: Harness, token: string, path: '/api/v1/backup' | '/api/v1/restore', json: unknown): Promise<{ job: any; seconds: number }> {
  const started = Date.now();
  const created = await server.request(path, { method: 'POST', token, json });
  expect(created.status, JSON.stringify(created.body)).toBe(202);
  for (;;) {
    const res = await server.request(`${path}/${created.body.data.id}`, { token });
    if (['completed', 'failed', 'cancelled'].includes(res.body.data.status)) return { job: res.body.data, seconds: (Date.now() - started) / 1000 };
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('cloud in object storage', () => {
  it('reports the object store in /status, and the kind of every destination', async () => {
    const res = await h.request('/api/v1/status');
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('ok');
    expect(res.body.data.checks.object_store).toEqual({ status: 'ok', latency_ms: expect.any(Number) });
    expect(res.body.data.destinations).toEqual([
      { name: 'cloud', kind: 's3' },
      { name: 'local', kind: 'local' },
    ]);
  });

  it('backs up into the bucket under the account prefix, restores byte-identical, and keeps no key or plaintext there', async () => {
    const key = await h.newKey();
    const token = await h.tokenFor(key);
    const source = makeSource(h.root, 'documents');
    const { job } = await run(h, token, '/api/v1/backup', { source, destination: 'cloud' });
    expect(job).toMatchObject({ status: 'completed', destination: 'cloud', destination_kind: 's3', error: null });

    const objects = await bucketObjects(`service/${key.accountId}/cloud/`);
    const names = objects.map((o) => o.key.slice(`service/${key.accountId}/cloud/`.length));
    expect(names).toContain('config');
    expect(names.filter((n) => n.startsWith('data/')).length).toBeGreaterThanOrEqual(2);
    expect(names.some((n) => n.startsWith('snapshots/'))).toBe(true);
    // Keys stay apart from data: no key object, and nothing of the source in the clear.
    expect(names.filter((n) => n.split('/').includes('keys'))).toEqual([]);
    for (const o of objects) expect(o.body.includes(MARKER), o.key).toBe(false);
    // Nothing of the account's repository on the server's disk.
    expect(existsSync(join(h.dataDir, 'repositories', key.accountId))).toBe(false);

    const target = join(h.root, 'restored');
    const restored = await run(h, token, '/api/v1/restore', { backup_id: job.id, target_path: target });
    expect(restored.job).toMatchObject({ status: 'completed', error: null });
    expect(tree(target)).toEqual(tree(source));
  });

  it('reports a frozen gateway within the check limit, degraded, and recovers', async () => {
    rgw.freezeGateway();
    try {
      const started = Date.now();
      const res = await h.request('/api/v1/status');
      expect(Date.now() - started).toBeLessThan(3000);
      expect(res.body.data.status).toBe('degraded');
      expect(res.body.data.checks.object_store.status).toBe('failed');
      expect(res.body.data.checks.database.status).toBe('ok');
    } finally {
      rgw.thawGateway();
    }
    await expect.poll(async () => (await h.request('/api/v1/status')).body.data.checks.object_store.status, { timeout: 10_000 }).toBe('ok');
  });

  it('refuses an unknown destination at once', async () => {
    const token = await h.tokenFor(await h.newKey());
    const unknown = await h.request('/api/v1/backup', { method: 'POST', token, json: { source: h.root, destination: 'offsite' } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error).toMatchObject({ code: 'DESTINATION_UNAVAILABLE', details: { destination: 'offsite' } });
  });
});

describe('a second server that shares only the bucket, the database and the keys', () => {
  it('restores byte-identical what the first backed up, with nothing of the first server\'s disk', async () => {
    const pg = await startPostgres();
    const keys = mkdtempSync(join(tmpdir(), 'keys-'));
    try {
      // What a deployment shares: the bucket, PostgreSQL, the master key file (kept apart from
      // every DATA_DIR) and the token signing key. Each server has its own DATA_DIR.
      const shared = {
        DATABASE_URL: await pg.createDatabase(),
        MASTER_KEY_FILE: join(keys, 'master.key'),
        TOKEN_SIGNING_KEY: randomBytes(32).toString('base64'),
        ...rgw.env(BUCKET, 'shared'),
      };
      const first = await startHarness(shared);
      const key = await first.newKey();
      const source = makeSource(first.root, 'documents');
      const expected = tree(source);
      const { job } = await run(first, await first.tokenFor(key), '/api/v1/backup', { source, destination: 'cloud' });
      expect(job).toMatchObject({ status: 'completed', destination_kind: 's3' });
      await first.cleanup(); // the first server is gone, its DATA_DIR (repositories, secrets) with it
      expect(existsSync(first.dir)).toBe(false);

      const second = await startHarness(shared);
      try {
        const target = join(second.root, 'restored');
        const restored = await run(second, await second.tokenFor(key), '/api/v1/restore', { backup_id: job.id, target_path: target });
        expect(restored.job).toMatchObject({ status: 'completed', error: null });
        expect(tree(target)).toEqual(expected);
      } finally {
        await second.cleanup();
      }
    } finally {
      await pg.stop();
      rmSync(keys, { recursive: true, force: true });
    }
  });
});

describe('the object store failing', () => {
  let token: string;
  let source: string;
  beforeAll(async () => {
    token = await faults.tokenFor(await faults.newKey());
    source = makeSource(faults.root, 'src');
  });

  it('fails a backup cleanly when the gateway stops mid-backup; after a restart the next one works and restores byte-identical', async () => {
    let stopped = false;
    proxy.beforeForward(async (req) => {
      if (!stopped && req.method === 'PUT' && req.url!.includes('/data/')) {
        stopped = true;
        await rgw.stopGateway(); // the first pack is on its way: the gateway is gone before it arrives
      }
    });
    try {
      const { job, seconds } = await run(faults, token, '/api/v1/backup', { source });
      expect(stopped).toBe(true);
      expect(job).toMatchObject({ status: 'failed', error: { code: 'DESTINATION_UNAVAILABLE' } });
      expect(seconds).toBeLessThan(15); // the retry window of FAST, and the engine's wind-down
    } finally {
      proxy.beforeForward(null);
      await rgw.startGateway();
    }
    const again = await run(faults, token, '/api/v1/backup', { source });
    expect(again.job, JSON.stringify(again.job.error)).toMatchObject({ status: 'completed', error: null });
    const target = join(faults.root, 'after-stop');
    expect((await run(faults, token, '/api/v1/restore', { backup_id: again.job.id, target_path: target })).job.status).toBe('completed');
    expect(tree(target)).toEqual(tree(source));
  });

  it('fails a backup within the bound when the gateway freezes mid-backup, and works once it thaws', async () => {
    let frozen = false;
    proxy.beforeForward((req) => {
      if (!frozen && req.method === 'PUT' && req.url!.includes('/data/')) {
        frozen = true;
        rgw.freezeGateway();
      }
    });
    try {
      const { job, seconds } = await run(faults, token, '/api/v1/backup', { source: makeSource(faults.root, 'src2') }); // new data: packs to write
      expect(frozen).toBe(true);
      expect(job).toMatchObject({ status: 'failed', error: { code: 'DESTINATION_UNAVAILABLE' } });
      // The job ends about one operation's bound after the freeze (the engine gives up at the first
      // failure); with the defaults the same allowance stays inside two minutes.
      const allowanceMs = (limits: S3Limits) => 2 * frozenStoreBoundMs(limits) + 5000;
      expect(seconds * 1000).toBeLessThan(allowanceMs(FAST));
      expect(allowanceMs(DEFAULT_S3_LIMITS)).toBeLessThan(120_000);
    } finally {
      proxy.beforeForward(null);
      rgw.thawGateway();
    }
    expect((await run(faults, token, '/api/v1/backup', { source })).job).toMatchObject({ status: 'completed' });
  });

  it('fails at once with credentials the store refuses, and with a bucket that does not exist', async () => {
    const fails = async (destination: string): Promise<void> => {
      const { job, seconds } = await run(faults, token, '/api/v1/backup', { source, destination });
      expect(job, destination).toMatchObject({ status: 'failed', destination, destination_kind: 's3', error: { code: 'DESTINATION_UNAVAILABLE' } });
      expect(seconds).toBeLessThan(5);
    };
    await fails('nobucket');
    const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY } = process.env;
    delete process.env.AWS_ACCESS_KEY_ID; // the profile alone names badkey's credentials
    delete process.env.AWS_SECRET_ACCESS_KEY;
    try {
      await fails('badkey');
    } finally {
      Object.assign(process.env, { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY });
    }
    const status = await faults.request('/api/v1/status');
    expect(status.body.data).toMatchObject({ status: 'degraded', checks: { object_store: { status: 'failed' } } });
  });
});

describe('cloud without object storage', () => {
  it('says cloud is local, and probes no object store', async () => {
    const plain = await startHarness();
    try {
      const res = await plain.request('/api/v1/status');
      expect(res.body.data.checks).not.toHaveProperty('object_store');
      expect(res.body.data.destinations).toEqual([
        { name: 'cloud', kind: 'local' },
        { name: 'local', kind: 'local' },
      ]);
      const token = await plain.tokenFor(await plain.newKey());
      const job = await plain.request('/api/v1/backup', { method: 'POST', token, json: { source: plain.root, destination: 'cloud' } });
      expect(job.body.data).toMatchObject({ destination: 'cloud', destination_kind: 'local' });
    } finally {
      await plain.cleanup();
    }
  });
});

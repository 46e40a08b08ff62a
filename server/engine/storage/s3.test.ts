import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRgw, type Rgw } from '../../testing/services/rgw.ts';
import { startS3Proxy, type S3Proxy } from '../../testing/services/s3-proxy.ts';
import { backup, check, forget, newMasterKey, prune, Repository, restore } from '../index.ts';
import { listAll } from './backend.ts';
import { ObjectNotFoundError, StorageFullError, StorageUnavailableError } from './errors.ts';
import { createS3Client, S3_PACKING, S3Backend, type S3Connection } from './s3.ts';
import { DEFAULT_S3_LIMITS, frozenStoreBoundMs, type S3Limits } from './s3-retry.ts';
import { backendSuite } from './suite.ts';

let rgw: Rgw;
let proxy: S3Proxy;
let credentialsDir: string;
const BUCKET = 'conformance';

/** Short limits for the fault tests, so a hung store costs seconds; the defaults are checked below. */
const FAST: S3Limits = { connectTimeoutMs: 1000, idleTimeoutMs: 1500, attemptBaseMs: 10_000, minBytesPerSecond: 2 ** 20, attempts: 4, retryWindowMs: 3000, baseDelayMs: 50, maxDelayMs: 400 };

beforeAll(async () => {
  rgw = await startRgw();
  await rgw.createBucket(BUCKET);
  proxy = await startS3Proxy(rgw.endpoint);
  // Credentials as operators give them: the SDK's environment variables, or a shared-credentials profile.
  process.env.AWS_ACCESS_KEY_ID = rgw.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = rgw.secretAccessKey;
  credentialsDir = mkdtempSync(join(tmpdir(), 'aws-'));
  writeFileSync(join(credentialsDir, 'credentials'), `[wrong]\naws_access_key_id = ${rgw.accessKeyId}\naws_secret_access_key = not-the-secret\n[unknown]\naws_access_key_id = NOSUCHKEY\naws_secret_access_key = whatever\n`);
  process.env.AWS_SHARED_CREDENTIALS_FILE = join(credentialsDir, 'credentials');
  process.env.AWS_CONFIG_FILE = join(credentialsDir, 'config');
});
afterAll(async () => {
  await proxy?.close();
  await rgw?.cleanup();
  if (credentialsDir) rmSync(credentialsDir, { recursive: true, force: true });
});

function backend(
  options: { via?: 'proxy'; bucket?: string; prefix?: string; limits?: S3Limits; connection?: Partial<S3Connection>; packing?: S3Backend['packing'] } = {},
): S3Backend {
  const endpoint = options.via === 'proxy' ? proxy.endpoint : rgw.endpoint;
  const client = createS3Client({ endpoint, region: rgw.region, forcePathStyle: true, ...options.connection }, options.limits);
  return new S3Backend({
    client,
    bucket: options.bucket ?? BUCKET,
    prefix: options.prefix ?? `t/${randomBytes(6).toString('hex')}`,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.packing ? { packing: options.packing } : {}),
  });
}

// Each conformance test gets its own prefix of one bucket; the cluster is thrown away at the end.
backendSuite('s3', async () => ({ backend: backend(), cleanup: async () => {} }));

/** Every operation fails with the backend's own error class. */
async function expectEveryOperation(b: S3Backend, error: new (...args: never[]) => Error, message: RegExp): Promise<void> {
  await expect(b.save('data/00/x', [Buffer.from('x')])).rejects.toThrow(expect.objectContaining({ constructor: error, message: expect.stringMatching(message) }));
  await expect(b.load('config')).rejects.toBeInstanceOf(error);
  await expect(b.load('config', { offset: 0, length: 1 })).rejects.toBeInstanceOf(error);
  await expect(b.stat('config')).rejects.toBeInstanceOf(error);
  await expect(listAll(b, 'index/')).rejects.toBeInstanceOf(error);
  await expect(b.remove('config')).rejects.toBeInstanceOf(error);
}

describe('s3 backend against a real gateway', () => {
  it('keeps repositories under their own prefixes apart, even when one prefix starts the other', async () => {
    const a = backend({ prefix: 'tenants/acc_1/cloud' });
    const b = backend({ prefix: 'tenants/acc_1/cloud2' });
    await a.save('index/i', [Buffer.from('a')]);
    await b.save('index/j', [Buffer.from('b')]);
    expect((await listAll(a, '')).map((o) => o.name)).toEqual(['index/i']);
    expect((await listAll(b, 'index/')).map((o) => o.name)).toEqual(['index/j']);
    await expect(a.load('index/j')).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(a.location).toBe(`s3://${BUCKET}/tenants/acc_1/cloud/`);
  });

  it('reads many ranges of one object, small and large, in a few requests, and nothing of an object replaced since', async () => {
    const b = backend({ via: 'proxy' });
    const bytes = randomBytes(50 * 2 ** 20); // more than a 32 MiB pack's window of 40 MiB
    await b.save('data/aa/pack', [bytes]);
    proxy.reset();
    const ranges = Array.from({ length: 400 }, (_, i) => ({ offset: i * 130_000 + (i % 7), length: 3000 + i }));
    ranges.push({ offset: 40 * 2 ** 20 - 100, length: 200 }); // across the two windows
    ranges.push({ offset: 5 * 2 ** 20, length: 4 * 2 ** 20 }); // a large blob's range: from its window as well
    const got = await Promise.all(ranges.map((r) => b.load('data/aa/pack', r)));
    for (const [i, r] of ranges.entries()) expect(Buffer.from(got[i]!).equals(bytes.subarray(r.offset, r.offset + r.length))).toBe(true);
    expect(proxy.counts.byMethod.GET).toBe(2); // two 40 MiB windows, each fetched once (a pack of up to 40 MiB is one)
    const next = randomBytes(1000);
    await b.save('data/aa/pack', [next]);
    expect(Buffer.from(await b.load('data/aa/pack', { offset: 10, length: 20 })).equals(next.subarray(10, 30))).toBe(true);
    await expect(b.load('data/aa/pack', { offset: 990, length: 20 })).rejects.toBeInstanceOf(RangeError);
  });

  it('uploads an object from its parts with the SHA-256 of the whole signed, not one buffer', async () => {
    const b = backend({ via: 'proxy' });
    const parts = [randomBytes(3 * 2 ** 20), randomBytes(1000), randomBytes(2 ** 20 + 7)];
    const signed: string[] = [];
    proxy.beforeForward((req) => {
      if (req.method === 'PUT') signed.push(String(req.headers['x-amz-content-sha256']));
    });
    try {
      await b.save('data/bb/parts', parts);
    } finally {
      proxy.beforeForward(null);
    }
    expect(signed).toEqual([createHash('sha256').update(Buffer.concat(parts)).digest('hex')]);
    expect(Buffer.from(await b.load('data/bb/parts')).equals(Buffer.concat(parts))).toBe(true);
  });

  it('refuses wrong credentials at once, as unavailable, without retrying', async () => {
    const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY } = process.env;
    delete process.env.AWS_ACCESS_KEY_ID; // the profile alone names the credentials
    delete process.env.AWS_SECRET_ACCESS_KEY;
    try {
      proxy.reset();
      await expectEveryOperation(backend({ via: 'proxy', connection: { profile: 'wrong' } }), StorageUnavailableError, /refused the credentials: SignatureDoesNotMatch/);
      expect(proxy.counts.requests).toBe(6);
      await expectEveryOperation(backend({ connection: { profile: 'unknown' } }), StorageUnavailableError, /refused the credentials: InvalidAccessKeyId/);
      await expectEveryOperation(backend({ connection: { profile: 'none-such' } }), StorageUnavailableError, /no credentials are configured/);
    } finally {
      Object.assign(process.env, { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY });
    }
  });

  it('reports a missing bucket as unavailable, also where S3 answers a bodiless 404', async () => {
    await expectEveryOperation(backend({ bucket: 'no-such-bucket' }), StorageUnavailableError, /bucket does not exist/);
    await expect(backend({ bucket: 'no-such-bucket' }).stat('config')).rejects.toThrow(/bucket does not exist/);
  });

  it('retries throttling and server errors with backoff, then gives up as unavailable', async () => {
    const b = backend({ via: 'proxy', limits: FAST });
    proxy.reset();
    proxy.fail(503, 'SlowDown', 2);
    await b.save('data/00/retried', [Buffer.from('kept')]);
    expect(proxy.counts.byMethod.PUT).toBe(3);
    expect(Buffer.from(await b.load('data/00/retried')).toString()).toBe('kept');

    proxy.reset();
    proxy.fail(500, 'InternalError', 100);
    await expect(b.stat('data/00/retried')).rejects.toThrow(StorageUnavailableError);
    expect(proxy.counts.requests).toBe(FAST.attempts);
    proxy.fail(500, 'InternalError', 0);
  });

  it('turns a quota into the full error and keeps nothing of the refused write', async () => {
    await rgw.createBucket('small');
    await rgw.admin(['quota', 'set', '--quota-scope=bucket', '--bucket=small', '--max-size=1048576']);
    await rgw.admin(['quota', 'enable', '--quota-scope=bucket', '--bucket=small']);
    const b = backend({ bucket: 'small' });
    await b.save('data/00/a', [randomBytes(700_000)]);
    await expect(b.save('data/00/b', [randomBytes(700_000)])).rejects.toBeInstanceOf(StorageFullError);
    expect((await listAll(b, 'data/')).map((o) => o.name)).toEqual(['data/00/a']);
  });

  it('bounds an operation on a frozen gateway, and a stopped one fails fast; both work again after', async () => {
    const b = backend({ limits: FAST });
    await b.save('index/before', [Buffer.from('x')]);
    rgw.freezeGateway();
    try {
      const started = Date.now();
      await expect(b.save('data/00/frozen', [randomBytes(1024 * 1024)])).rejects.toThrow(/did not answer in time/);
      await expect(b.load('index/before')).rejects.toBeInstanceOf(StorageUnavailableError);
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(2 * FAST.idleTimeoutMs);
      expect(elapsed).toBeLessThan(2 * frozenStoreBoundMs(FAST) + 2000);
    } finally {
      rgw.thawGateway();
    }
    await rgw.stopGateway();
    try {
      const started = Date.now();
      await expect(b.load('index/before')).rejects.toThrow(/cannot be reached: ECONNREFUSED/);
      expect(Date.now() - started).toBeLessThan(FAST.retryWindowMs + 1000);
    } finally {
      await rgw.startGateway();
    }
    expect(Buffer.from(await b.load('index/before')).toString()).toBe('x');
    await b.save('data/00/after', [Buffer.from('y')]);
  });

  it('backs up into data packs of the size S3 asks for; packs of another size in the same repository are read, pruned and checked alike', async () => {
    const MiB = 2 ** 20;
    const dir = mkdtempSync(join(tmpdir(), 's3-packing-'));
    try {
      const a = randomBytes(40 * MiB);
      mkdirSync(join(dir, 'one'));
      writeFileSync(join(dir, 'one', 'a.bin'), a);
      mkdirSync(join(dir, 'two'));
      writeFileSync(join(dir, 'two', 'a-part.bin'), a.subarray(0, 24 * MiB)); // shares most of a's first pack, some of its second
      writeFileSync(join(dir, 'two', 'b.bin'), randomBytes(40 * MiB));
      for (let i = 0; i < 50; i++) writeFileSync(join(dir, 'two', `small-${i}.txt`), `small ${i} ${randomBytes(500).toString('hex')}`);
      const prefix = `packing/${randomBytes(6).toString('hex')}`;
      const key = newMasterKey();
      const opts = { compression: 'zstd', encryption: true, deduplication: true } as const;
      const packs = async () => new Map((await listAll(backend({ prefix }), 'data/')).map((o) => [o.name, o.size]));

      // A repository first written with 16 MiB packs (as a local directory writes them)...
      const small = await Repository.open(backend({ prefix, packing: { dataPackBytes: 16 * MiB, unwrittenBytes: 64 * MiB } }), key);
      const first = await backup(small, { ...opts, source: join(dir, 'one') });
      await small.close();
      const before = await packs();
      const large = (sizes: Iterable<number>, from: number) => [...sizes].filter((n) => n >= from * MiB);
      expect(large(before.values(), 16)).toHaveLength(2);
      expect(large(before.values(), 24)).toHaveLength(0);

      // ...then by the S3 backend as it is: 32 MiB data packs.
      const repo = await Repository.open(backend({ prefix }), key);
      expect(repo.backend.packing).toEqual(S3_PACKING);
      const second = await backup(repo, { ...opts, source: join(dir, 'two') });
      const added = [...(await packs())].filter(([name]) => !before.has(name)).map(([, size]) => size);
      expect(large(added, 32)).toHaveLength(1);
      expect(large(added, 40)).toHaveLength(0);

      await forget(repo, first.snapshotId);
      const pruned = await prune(repo, { repackThreshold: 0.1 });
      expect(pruned.packsDeleted + pruned.packsRepacked).toBeGreaterThan(0);
      expect((await check(repo, { readData: true })).ok).toBe(true);
      await restore(repo, second.snapshotId, { target: join(dir, 'out'), overwrite: 'never' });
      expect(readFileSync(join(dir, 'out', 'a-part.bin')).equals(a.subarray(0, 24 * MiB))).toBe(true);
      expect(readFileSync(join(dir, 'out', 'b.bin')).equals(readFileSync(join(dir, 'two', 'b.bin')))).toBe(true);
      expect(readFileSync(join(dir, 'out', 'small-7.txt'), 'utf8')).toBe(readFileSync(join(dir, 'two', 'small-7.txt'), 'utf8'));
      await repo.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails a frozen store within well under two minutes with the default limits', () => {
    expect(frozenStoreBoundMs(DEFAULT_S3_LIMITS)).toBeLessThan(60_000);
  });
});

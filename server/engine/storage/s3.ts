import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { bufferedObject, checkName, type Backend, type ObjectInfo, type ObjectWriter, type Packing } from './backend.ts';
import { ObjectNotFoundError, StorageError, StorageUnavailableError } from './errors.ts';
import { RangeCache, rangeCacheFor, type FetchSink, type RangeCacheOptions } from './range-cache.ts';
import { DEFAULT_S3_LIMITS, withRetries, type S3Limits } from './s3-retry.ts';

/** Where an S3-compatible store is and how to address it; credentials come from the SDK's own chain. */
export interface S3Connection {
  /** Else AWS_REGION / the profile's region. */
  region?: string;
  /** Else AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, else AWS S3. */
  endpoint?: string;
  /** Path-style URLs (Ceph RGW, MinIO); virtual-hosted otherwise. */
  forcePathStyle: boolean;
  /** An AWS shared-config profile for this store's credentials (else AWS_PROFILE / the environment). */
  profile?: string;
}

/** PutObject's limit: larger objects would need multipart, which the engine never needs (packs are ~32 MiB). */
const MAX_PUT_BYTES = 5 * 2 ** 30;

/**
 * Packing on object storage: each object is a request to write and one to read, so data packs
 * close at 32 MiB (half the requests of 16 MiB packs; a restore's read windows, a pack each, grow
 * with them), with the pack being filled and about two being saved.
 */
export const S3_PACKING: Packing = { dataPackBytes: 32 * 2 ** 20, unwrittenBytes: 96 * 2 ** 20 };

/**
 * One client per store, shared by every repository on it. The SDK retries nothing itself
 * (`maxAttempts: 1`): the backend retries with its own deadlines. Checksums are sent only where
 * an operation requires one, as S3-compatible stores without the 2025 checksum headers need
 * (RGW 16 answers 411 to aws-chunked bodies); uploads keep an integrity check through the
 * signed payload hash.
 */
export function createS3Client(connection: S3Connection, limits: S3Limits = DEFAULT_S3_LIMITS): S3Client {
  return new S3Client({
    ...(connection.region ? { region: connection.region } : {}),
    ...(connection.endpoint ? { endpoint: connection.endpoint } : {}),
    ...(connection.profile ? { profile: connection.profile } : {}),
    forcePathStyle: connection.forcePathStyle,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
    requestHandler: {
      connectionTimeout: limits.connectTimeoutMs,
      socketTimeout: limits.idleTimeoutMs,
      httpAgent: { keepAlive: true, maxSockets: 64 },
      httpsAgent: { keepAlive: true, maxSockets: 64 },
    },
  });
}

/**
 * A repository under a prefix of an S3 bucket. Objects are written whole with one PutObject
 * (atomic: a reader sees the old object, none, or the whole new one); `ifAbsent` is
 * `If-None-Match: *`. Ranged reads are served from windows of the object (a whole
 * pack), each fetched once per backend and streamed in, ahead of the reads once they are
 * announced (range-cache.ts). Errors are the storage module's own (not-found, unavailable,
 * full); no SDK error leaves this module except as a `cause`.
 */
export class S3Backend implements Backend {
  readonly location: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  /** The key prefix of this repository: '' or ending in '/'. */
  private readonly root: string;
  private readonly limits: S3Limits;
  readonly packing: Packing;
  /** Ranged reads come from windows of the object (range-cache.ts); null reads every range as asked. */
  private readonly windows: RangeCache | null;

  constructor(options: { client: S3Client; bucket: string; prefix: string; limits?: S3Limits; packing?: Packing; rangeCache?: RangeCacheOptions | false }) {
    const prefix = options.prefix.replace(/^\/+|\/+$/g, '');
    if (prefix !== '') checkName(prefix);
    this.client = options.client;
    this.bucket = options.bucket;
    this.root = prefix === '' ? '' : `${prefix}/`;
    this.limits = options.limits ?? DEFAULT_S3_LIMITS;
    this.location = `s3://${this.bucket}/${this.root}`;
    this.packing = options.packing ?? S3_PACKING;
    const cache = options.rangeCache ?? rangeCacheFor(this.packing.dataPackBytes);
    this.windows = cache ? new RangeCache((name, offset, length, sink) => this.stream(name, offset, length, sink), cache) : null;
  }

  private key(name: string): string {
    checkName(name);
    return this.root + name;
  }

  async save(name: string, parts: readonly Uint8Array[], options: { ifAbsent?: boolean } = {}): Promise<boolean> {
    const Key = this.key(name);
    const length = parts.reduce((n, p) => n + p.length, 0);
    if (length > MAX_PUT_BYTES) throw new StorageError(`save ${name}: ${length} bytes is more than one upload takes`);
    // The parts are sent as they are (no copy into one buffer, a pack's size more per upload), and
    // the request signs their SHA-256, so the store rejects a body damaged on the way.
    const hash = createHash('sha256');
    for (const p of parts) hash.update(p);
    const sha256 = hash.digest('hex');
    try {
      return await withRetries(
        this.limits,
        'save',
        name,
        length,
        async (abortSignal) => {
          const put = new PutObjectCommand({
            Bucket: this.bucket,
            Key,
            Body: Readable.from(parts, { objectMode: false }),
            ContentLength: length,
            ...(options.ifAbsent ? { IfNoneMatch: '*' } : {}),
          });
          put.middlewareStack.add(signedPayload(sha256), { step: 'build', name: 'signedPayloadHash' });
          await this.client.send(put, { abortSignal });
          return true;
        },
        // An object of that name exists (possibly our own write, when an earlier attempt's answer was lost).
        (verdict) => (options.ifAbsent && verdict.kind === 'precondition-failed' ? { value: false } : undefined),
      );
    } finally {
      this.windows?.drop(name);
    }
  }

  /** An object is uploaded whole (one PutObject, atomic), so its parts are kept until the commit. */
  create(): ObjectWriter {
    return bufferedObject((name, parts) => this.save(name, parts));
  }

  async load(name: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    this.key(name); // a bad name is refused before anything else
    if (range && range.length === 0) {
      // An empty range cannot be asked of S3; the object must still exist and be long enough.
      if (range.offset > (await this.stat(name)).size) throw new RangeError(`${name} holds fewer than ${range.offset} bytes`);
      return new Uint8Array(0);
    }
    const windowed = range && this.windows?.read(name, range.offset, range.length);
    if (windowed) return windowed;
    const bytes = await this.get(name, range);
    if (range && bytes.length !== range.length) throw new RangeError(`${name} holds fewer than ${range.offset + range.length} bytes`);
    return bytes;
  }

  expect(name: string, offset: number, length: number): void {
    this.windows?.expect(name, offset, length);
  }

  /** The object, or up to `range.length` bytes of it from `range.offset` (fewer at its end). */
  private get(name: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    const Key = this.key(name);
    const Range = range ? `bytes=${range.offset}-${range.offset + range.length - 1}` : undefined;
    return withRetries(this.limits, 'load', name, range?.length ?? 16 * 2 ** 20, async (abortSignal) => {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key, ...(Range ? { Range } : {}) }), { abortSignal });
      const body = await res.Body!.transformToByteArray();
      if (res.ContentLength !== undefined && body.length !== res.ContentLength) {
        throw Object.assign(new Error(`short body: ${body.length} of ${res.ContentLength} bytes`), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
      }
      return body;
    });
  }

  /**
   * Up to `length` bytes from `offset` (fewer at the object's end), handed to `sink` as they
   * arrive. A retry after a body cut short asks only for the bytes not yet handed over.
   */
  private stream(name: string, offset: number, length: number, sink: FetchSink): Promise<void> {
    const Key = this.key(name);
    let total: number | undefined;
    let received = 0;
    return withRetries(this.limits, 'load', name, length, async (abortSignal) => {
      const end = offset + (total ?? length) - 1;
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key, Range: `bytes=${offset + received}-${end}` }), { abortSignal });
      const coming = res.ContentLength;
      if (coming === undefined) {
        // No length announced: the body is read whole first.
        if (total !== undefined) throw Object.assign(new Error('no length on a resumed read'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
        const body = await res.Body!.transformToByteArray();
        total = body.length;
        sink.size(total);
        sink.data(body);
        received = total;
        return;
      }
      if (total === undefined) {
        total = coming;
        sink.size(total);
      } else if (coming !== total - received) {
        throw Object.assign(new Error(`resumed read of ${coming} bytes, ${total - received} expected`), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
      }
      for await (const chunk of res.Body as AsyncIterable<Uint8Array>) {
        const take = Math.min(chunk.length, total - received);
        if (take > 0) sink.data(take === chunk.length ? chunk : chunk.subarray(0, take));
        received += take;
      }
      if (received !== total) throw Object.assign(new Error(`short body: ${received} of ${total} bytes`), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
    });
  }

  async stat(name: string): Promise<ObjectInfo> {
    const Key = this.key(name);
    try {
      const res = await withRetries(this.limits, 'stat', name, 0, (abortSignal) =>
        this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }), { abortSignal }),
      );
      return { name, size: res.ContentLength ?? 0, modified: res.LastModified ?? new Date(0) };
    } catch (err) {
      // A HEAD answer has no body, so a missing bucket looks like a missing object: ask the bucket.
      if (err instanceof ObjectNotFoundError) await this.checkBucket(name);
      throw err;
    }
  }

  private async checkBucket(name: string): Promise<void> {
    try {
      await withRetries(this.limits, 'stat', name, 0, (abortSignal) => this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal }));
    } catch (err) {
      if (err instanceof ObjectNotFoundError) throw new StorageUnavailableError(`stat ${name}: the bucket does not exist`, { cause: err });
      throw err;
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    if (prefix !== '' && prefix.split('/').slice(0, -1).some((p) => p === '' || p === '.' || p === '..')) {
      throw new TypeError(`bad list prefix ${JSON.stringify(prefix)}`);
    }
    let token: string | undefined;
    do {
      const page = await withRetries(this.limits, 'list', prefix || '/', 0, (abortSignal) =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.root + prefix, ...(token ? { ContinuationToken: token } : {}) }), {
          abortSignal,
        }),
      );
      for (const object of page.Contents ?? []) {
        const name = object.Key?.slice(this.root.length) ?? '';
        if (!isCleanName(name)) continue; // not written by a backend: never handed to the engine
        yield { name, size: object.Size ?? 0, modified: object.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async remove(name: string): Promise<void> {
    const Key = this.key(name);
    try {
      await withRetries(
        this.limits,
        'remove',
        name,
        0,
        async (abortSignal) => {
          await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }), { abortSignal });
        },
        (verdict) => (verdict.kind === 'not-found' ? { value: undefined } : undefined),
      );
    } finally {
      this.windows?.drop(name);
    }
  }
}

/** Has the request sign this SHA-256 of its body (the SDK signs only a body in one buffer; a stream would go unsigned). */
function signedPayload(sha256: string) {
  return <A, R>(next: (args: A) => Promise<R>) =>
    (args: A): Promise<R> => {
      const headers = (args as { request?: { headers?: Record<string, string> } }).request?.headers;
      if (headers) headers['x-amz-content-sha256'] = sha256;
      return next(args);
    };
}

function isCleanName(name: string): boolean {
  try {
    checkName(name);
    return true;
  } catch {
    return false;
  }
}

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { ConfigError } from '../config.ts';
import type { Backend } from '../engine/storage/backend.ts';
import { LocalBackend } from '../engine/storage/local.ts';
import { DEFAULT_S3_LIMITS, type S3Limits } from '../engine/storage/s3-retry.ts';
import type { DestinationKind, DestinationSettings } from './settings.ts';

/** The object-store probe of /status: one quick attempt, so a hung store costs a second, not the retry window. */
const PROBE_LIMITS: S3Limits = { connectTimeoutMs: 1000, idleTimeoutMs: 1000, attemptBaseMs: 1000, minBytesPerSecond: 2 ** 20, attempts: 1, retryWindowMs: 0, baseDelayMs: 0, maxDelayMs: 0 };

/** The object-store client (the AWS SDK), loaded only when a destination is in object storage. */
type S3Module = typeof import('../engine/storage/s3.ts');

type Entry =
  | { settings: Extract<DestinationSettings, { kind: 'local' }> }
  | { settings: Extract<DestinationSettings, { kind: 's3' }>; client: S3Client; probeClient: S3Client };

/**
 * The configured destinations, name → where each account's repository of that name lives:
 * `<path>/<account id>/<name>` on local disk, `<prefix>/<account id>/<name>/` in a bucket.
 * One repository per account and destination: no two tenants share chunks, so deduplication
 * (and the stored_bytes it reports) never reveals what another account holds. The job runner
 * asks it for a Backend; it never builds one itself.
 */
export class Destinations {
  private readonly entries: Map<string, Entry>;
  private readonly s3Limits: S3Limits;
  private readonly s3: S3Module | null;

  /** The registry of `settings`; the object-store client is loaded only when one of them needs it. */
  static async open(settings: readonly DestinationSettings[], options: { s3Limits?: S3Limits } = {}): Promise<Destinations> {
    const s3 = settings.some((s) => s.kind === 's3') ? await import('../engine/storage/s3.ts') : null;
    return new Destinations(settings, options, s3);
  }

  private constructor(settings: readonly DestinationSettings[], options: { s3Limits?: S3Limits }, s3: S3Module | null) {
    this.s3Limits = options.s3Limits ?? DEFAULT_S3_LIMITS;
    this.s3 = s3;
    this.entries = new Map(
      settings.map((s): [string, Entry] =>
        s.kind === 'local'
          ? [s.name, { settings: s }]
          : [s.name, { settings: s, client: s3!.createS3Client(s.connection, this.s3Limits), probeClient: s3!.createS3Client(s.connection, PROBE_LIMITS) }],
      ),
    );
  }

  /**
   * Checks at start what the SDK resolves lazily: every object store has a region (from the
   * destination, AWS_REGION or the profile). Credentials are left to the first request: they may
   * come from an instance role that takes a network call to find.
   */
  async validate(): Promise<void> {
    for (const entry of this.entries.values()) {
      if (!('client' in entry)) continue;
      try {
        await entry.client.config.region();
      } catch {
        throw new ConfigError(`destination ${entry.settings.name} (s3://${entry.settings.bucket}) has no region: set AWS_REGION (stores that ignore it take any value, e.g. us-east-1)`);
      }
    }
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** Where the destination is kept now; null when no destination has that name. */
  kindOf(name: string): DestinationKind | null {
    return this.entries.get(name)?.settings.kind ?? null;
  }

  /** Every destination by name, with its kind (nothing about locations or credentials). */
  list(): { name: string; kind: DestinationKind }[] {
    return [...this.entries.values()].map(({ settings }) => ({ name: settings.name, kind: settings.kind }));
  }

  /** The storage of one account's repository in a destination; callers check `has(name)` first. */
  backendFor(accountId: string, name: string): Backend {
    const entry = this.entries.get(name);
    if (!entry) throw new Error(`no destination ${name}`);
    // Account ids are server-made; checked anyway, since they become path segments and key prefixes.
    if (!/^[A-Za-z0-9_-]+$/.test(accountId)) throw new Error(`unexpected account id ${accountId}`);
    const { settings } = entry;
    if (settings.kind === 'local') return new LocalBackend(join(settings.path, accountId, name));
    const { client } = entry as Extract<Entry, { client: S3Client }>;
    return new this.s3!.S3Backend({ client, bucket: settings.bucket, prefix: [settings.prefix, accountId, name].filter(Boolean).join('/'), limits: this.s3Limits });
  }

  /** Directories holding local repositories: never a backup source nor a restore target. */
  localRoots(): string[] {
    return [...new Set([...this.entries.values()].flatMap(({ settings }) => (settings.kind === 'local' ? [settings.path] : [])))];
  }

  get hasObjectStore(): boolean {
    return [...this.entries.values()].some(({ settings }) => settings.kind === 's3');
  }

  /**
   * The object-store check of /status: in every configured bucket, a probe object under the
   * destination's prefix (`.status-probe/…`, a name no account id takes) is written, read back and
   * removed. True when all succeed.
   */
  async checkObjectStores(): Promise<boolean> {
    const probes = [...this.entries.values()].flatMap((entry) => {
      if (entry.settings.kind !== 's3' || !('probeClient' in entry)) return [];
      const backend = new this.s3!.S3Backend({ client: entry.probeClient, bucket: entry.settings.bucket, prefix: entry.settings.prefix, limits: PROBE_LIMITS });
      return [probe(backend)];
    });
    return (await Promise.all(probes)).every(Boolean);
  }

  /** Closes the object stores' connections. */
  close(): void {
    for (const entry of this.entries.values()) {
      if ('client' in entry) {
        entry.client.destroy();
        entry.probeClient.destroy();
      }
    }
  }
}

async function probe(backend: Backend): Promise<boolean> {
  const name = `.status-probe/${process.pid}-${randomBytes(6).toString('hex')}`;
  const bytes = randomBytes(16);
  try {
    await backend.save(name, [bytes]);
    return Buffer.from(await backend.load(name)).equals(bytes);
  } catch {
    return false;
  } finally {
    await backend.remove(name).catch(() => {});
  }
}

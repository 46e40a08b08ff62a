/**
 * The engine as a command, so the benchmarks measure it in its own process like restic and borg:
 *   node bench/engine-cli.ts backup <repo> <source>
 *   node bench/engine-cli.ts restore <repo> <snapshot> <target>
 * <repo> is a directory, or s3://bucket/prefix for a repository in object storage (reached as the
 * service reaches it: the SDK's AWS_* variables, path-style URLs). The repository's key is kept in
 * BENCH_KEY_FILE, else beside it in <repo>.key (created with the repository). Prints the
 * operation's result as JSON.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Compression } from '../server/engine/index.ts';
import type { Backend } from '../server/engine/storage/backend.ts';

const [op, repoDir, a, b] = process.argv.slice(2);
if (!op || !repoDir || !a) {
  console.error('usage: engine-cli.ts backup <repo> <source> | restore <repo> <snapshot> <target>');
  process.exit(2);
}
(await import('../server/compile-cache.ts')).useCompileCache(); // as server/main.ts does, also when run by hand
// The modules this command needs, not the engine's whole index (prune, check, …): as a command
// line tool loads what its command uses. The index cost the start 30 ms more.
const [{ Repository }, { masterKeyFromBytes, masterKeyToBytes, newMasterKey }, { LocalBackend }, { backup }, { restore }] = await Promise.all([
  import('../server/engine/repository.ts'),
  import('../server/engine/crypto.ts'),
  import('../server/engine/storage/local.ts'),
  op === 'backup' ? import('../server/engine/backup.ts') : { backup: null },
  op === 'restore' ? import('../server/engine/restore.ts') : { restore: null },
]);

async function backendOf(spec: string): Promise<Backend> {
  const s3 = /^s3:\/\/([^/]+)\/?(.*)$/.exec(spec);
  if (!s3) return new LocalBackend(spec);
  const { createS3Client, S3Backend } = await import('../server/engine/storage/s3.ts'); // the SDK is loaded only when used
  return new S3Backend({ client: createS3Client({ forcePathStyle: true }), bucket: s3[1]!, prefix: s3[2]! });
}
const keyFile = process.env.BENCH_KEY_FILE ?? `${repoDir}.key`;
if (!existsSync(keyFile)) writeFileSync(keyFile, masterKeyToBytes(newMasterKey()), { mode: 0o600 });
const repo = await Repository.open(await backendOf(repoDir), masterKeyFromBytes(readFileSync(keyFile)));
const compression = (process.env.BENCH_COMPRESSION ?? 'zstd') as Compression;
const level = process.env.BENCH_LEVEL ? Number(process.env.BENCH_LEVEL) : undefined;
const result =
  op === 'backup'
    ? await backup!(repo, { source: a, compression, ...(level !== undefined ? { compressionLevel: level } : {}), encryption: true, deduplication: true })
    : await restore!(repo, a, { target: b!, overwrite: 'always' });
await repo.close();
process.stdout.write(`${JSON.stringify(result, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v))}\n`);

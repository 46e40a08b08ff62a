/**
 * The engine as a command, so the benchmarks measure it in its own process like restic and borg:
 *   node bench/engine-cli.ts backup <repo> <source>
 *   node bench/engine-cli.ts restore <repo> <snapshot> <target>
 *   node bench/engine-cli.ts list <repo> <snapshot>
 * The repository's key is kept beside it in <repo>.key (created with the repository). Prints the
 * operation's result as JSON.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Repository, backup, listEntries, masterKeyFromBytes, masterKeyToBytes, newMasterKey, restore } from '../server/engine/index.ts';
import type { Compression } from '../server/engine/index.ts';
import { LocalBackend } from '../server/engine/storage/local.ts';

const [op, repoDir, a, b] = process.argv.slice(2);
if (!op || !repoDir || !a) {
  console.error('usage: engine-cli.ts backup <repo> <source> | restore <repo> <snapshot> <target> | list <repo> <snapshot>');
  process.exit(2);
}
const keyFile = `${repoDir}.key`;
if (!existsSync(keyFile)) writeFileSync(keyFile, masterKeyToBytes(newMasterKey()), { mode: 0o600 });
const repo = await Repository.open(new LocalBackend(repoDir), masterKeyFromBytes(readFileSync(keyFile)));
const compression = (process.env.BENCH_COMPRESSION ?? 'zstd') as Compression;
const level = process.env.BENCH_LEVEL ? Number(process.env.BENCH_LEVEL) : undefined;
let result: unknown;
if (op === 'backup') {
  result = await backup(repo, { source: a, compression, ...(level !== undefined ? { compressionLevel: level } : {}), encryption: true, deduplication: true });
} else if (op === 'restore') {
  result = await restore(repo, a, { target: b!, overwrite: 'always' });
} else {
  let entries = 0;
  for await (const _ of listEntries(repo, a)) entries++;
  result = { entries };
}
await repo.close();
process.stdout.write(`${JSON.stringify(result, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v))}\n`);

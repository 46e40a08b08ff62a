/**
 * The engine as a command, so the benchmark measures it in its own process like restic and borg:
 *   node bench/engine-cli.ts backup <repo> <source>
 *   node bench/engine-cli.ts restore <repo> <snapshot> <target>
 * The password comes from BENCH_PASSWORD. Prints the operation's result as JSON.
 */
import { Repository, backup, restore } from '../server/engine/index.ts';
import type { Compression } from '../server/engine/index.ts';

const [op, repoDir, a, b] = process.argv.slice(2);
const password = process.env.BENCH_PASSWORD;
if (!op || !repoDir || !a || !password) {
  console.error('usage: BENCH_PASSWORD=… engine-cli.ts backup <repo> <source> | restore <repo> <snapshot> <target>');
  process.exit(2);
}
const repo = await Repository.open(repoDir, { password });
const compression = (process.env.BENCH_COMPRESSION ?? 'zstd') as Compression;
const level = process.env.BENCH_LEVEL ? Number(process.env.BENCH_LEVEL) : undefined;
const result =
  op === 'backup'
    ? await backup(repo, { source: a, compression, ...(level !== undefined ? { compressionLevel: level } : {}), encryption: true, deduplication: true })
    : await restore(repo, a, { target: b!, overwrite: 'always' });
await repo.close();
process.stdout.write(`${JSON.stringify(result)}\n`);

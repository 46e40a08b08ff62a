/**
 * A backup in its own process, for the crash test:
 *   ENGINE_KEY=<128 hex digits> node backup-child.ts <repo> backup <source>
 *   ENGINE_KEY=<128 hex digits> node backup-child.ts <repo> restore <snapshot> <target>
 * Prints one JSON line per progress report, then {"done": result}.
 */
import { Repository, backup, masterKeyFromBytes, restore } from '../index.ts';
import { LocalBackend } from '../storage/local.ts';

const [repoDir, op, a, b] = process.argv.slice(2);
const key = process.env.ENGINE_KEY;
if (!repoDir || !op || !a || !key) {
  console.error('usage: ENGINE_KEY=… backup-child.ts <repo> backup <source> | restore <snapshot> <target>');
  process.exit(2);
}
const repo = await Repository.open(new LocalBackend(repoDir), masterKeyFromBytes(Buffer.from(key, 'hex')));
const onProgress = (p: object) => process.stdout.write(`${JSON.stringify({ progress: p })}\n`);
const result =
  op === 'backup'
    ? await backup(repo, { source: a, compression: 'zstd', encryption: true, deduplication: true, onProgress })
    : await restore(repo, a, { target: b!, overwrite: 'always', onProgress });
await repo.close();
process.stdout.write(`${JSON.stringify({ done: result }, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v))}\n`);

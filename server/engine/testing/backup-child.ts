/**
 * A backup in its own process, for the crash test and the benchmark:
 *   node backup-child.ts <repo> <password> backup <source> [compression] [level]
 *   node backup-child.ts <repo> <password> restore <snapshot> <target>
 * Prints one JSON line per progress report, then {"done": result}.
 */
import { Repository, backup, restore } from '../index.ts';
import type { Compression } from '../index.ts';

const [repoDir, password, op, a, b, level] = process.argv.slice(2);
if (!repoDir || !password || !op || !a) {
  console.error('usage: backup-child.ts <repo> <password> backup <source> [compression] [level] | restore <snapshot> <target>');
  process.exit(2);
}
const repo = await Repository.open(repoDir, { password });
const onProgress = (p: object) => process.stdout.write(`${JSON.stringify({ progress: p })}\n`);
const result =
  op === 'backup'
    ? await backup(repo, {
        source: a,
        compression: (b ?? 'zstd') as Compression,
        ...(level ? { compressionLevel: Number(level) } : {}),
        encryption: true,
        deduplication: true,
        onProgress,
      })
    : await restore(repo, a, { target: b!, overwrite: 'always', onProgress });
await repo.close();
process.stdout.write(`${JSON.stringify({ done: result })}\n`);

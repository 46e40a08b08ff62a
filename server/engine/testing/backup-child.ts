/**
 * An engine operation in its own process, for the crash tests:
 *   ENGINE_KEY=<128 hex digits> node backup-child.ts <repo> backup <source>
 *   ENGINE_KEY=<128 hex digits> node backup-child.ts <repo> restore <snapshot> <target>
 *   ENGINE_KEY=<128 hex digits> node backup-child.ts <repo> prune
 * Prints one JSON line per progress report, then {"done": result}.
 */
import { Repository, backup, masterKeyFromBytes, prune, restore } from '../index.ts';
import { LocalBackend } from '../storage/local.ts';

const [repoDir, op, a, b] = process.argv.slice(2);
const key = process.env.ENGINE_KEY;
if (!repoDir || !op || (!a && op !== 'prune') || !key) {
  console.error('usage: ENGINE_KEY=… backup-child.ts <repo> backup <source> | restore <snapshot> <target>');
  process.exit(2);
}
const repo = await Repository.open(new LocalBackend(repoDir), masterKeyFromBytes(Buffer.from(key, 'hex')));
const pauseAt = process.env.PAUSE_AT;
const onProgress = (p: object): void => {
  process.stdout.write(`${JSON.stringify({ progress: p })}\n`);
  const at = p as { phase?: string; packsDone?: number; bytesDone?: number };
  // Stops dead at this step (the parent kills the process meanwhile).
  const reached = pauseAt?.startsWith('bytes:') ? (at.bytesDone ?? 0) >= Number(pauseAt.slice(6)) : pauseAt === `${at.phase}:${at.packsDone}`;
  if (reached) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120_000);
};
const result =
  op === 'prune'
    ? await prune(repo, { onProgress })
    : op === 'backup'
      ? await backup(repo, { source: a!, compression: 'zstd', encryption: true, deduplication: true, onProgress })
      : await restore(repo, a!, { target: b!, overwrite: 'always', onProgress });
await repo.close();
process.stdout.write(`${JSON.stringify({ done: result }, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v))}\n`);

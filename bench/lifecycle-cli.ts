/**
 * The lifecycle operations as a command, so the benchmark measures them in their own process
 * like restic and borg (the repository's key is beside it in <repo>.key, as bench/engine-cli.ts
 * keeps it):
 *   node bench/lifecycle-cli.ts forget-prune <repo> <keep-last>   forget all but the newest N, then prune
 *   node bench/lifecycle-cli.ts check <repo>                        check with every pack read
 * Prints the result as JSON.
 */
import { readFileSync } from 'node:fs';

(await import('../server/compile-cache.ts')).useCompileCache(); // as server/main.ts does, also when run by hand
const { Repository, check, forget, masterKeyFromBytes, prune } = await import('../server/engine/index.ts');
const { LocalBackend } = await import('../server/engine/storage/local.ts');

const [op, repoDir, arg] = process.argv.slice(2);
if (!op || !repoDir) {
  console.error('usage: lifecycle-cli.ts forget-prune <repo> <keep-last> | check <repo>');
  process.exit(2);
}
const repo = await Repository.open(new LocalBackend(repoDir), masterKeyFromBytes(readFileSync(`${repoDir}.key`)));
let result: unknown;
if (op === 'forget-prune') {
  const snapshots = await repo.snapshots(); // oldest first
  for (const s of snapshots.slice(0, Math.max(0, snapshots.length - Number(arg)))) await forget(repo, s.id);
  result = await prune(repo);
} else if (op === 'check') {
  result = await check(repo, { readData: true });
  if (!(result as { ok: boolean }).ok) {
    console.error(JSON.stringify(result));
    process.exit(1);
  }
} else throw new Error(`unknown operation ${op}`);
await repo.close();
process.stdout.write(`${JSON.stringify(result, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v))}\n`);

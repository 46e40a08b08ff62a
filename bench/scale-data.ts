import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { prng, textOf, vocabulary } from './data.ts';

/**
 * The scale benchmark's trees, generated deterministically and kept between runs: N small text
 * files of 1-4 KiB, 100 to a directory, 100 directories to a parent (t0000/d00/f00.txt ...).
 */
export const PER_DIR = 100;

export function scalePath(i: number): string {
  const leaf = Math.floor(i / PER_DIR);
  const top = Math.floor(leaf / PER_DIR);
  return join(`t${String(top).padStart(4, '0')}`, `d${String(leaf % PER_DIR).padStart(2, '0')}`, `f${String(i % PER_DIR).padStart(2, '0')}.txt`);
}

/** Creates `root` with `files` files unless a previous run left it complete. */
export async function generateScaleTree(root: string, files: number): Promise<void> {
  const marker = `${root}.done`;
  if (await stat(marker).then(() => true, () => false)) return;
  await rm(root, { recursive: true, force: true });
  const rand = prng(1000 + files);
  const vocab = vocabulary(rand, 4000);
  for (let i = 0; i < files; i += PER_DIR) {
    await mkdir(join(root, scalePath(i), '..'), { recursive: true });
    const batch: Promise<void>[] = [];
    for (let j = i; j < Math.min(i + PER_DIR, files); j++) batch.push(writeFile(join(root, scalePath(j)), textOf(rand, vocab, 1024 + Math.floor(rand() * 3072))));
    await Promise.all(batch);
  }
  await writeFile(marker, '');
}

/** Changes 1% of the files (every 100th, an appended line); returns the undo. */
export async function changeOnePercent(root: string, files: number): Promise<{ undo: () => Promise<void> }> {
  const originals: [string, Buffer][] = [];
  for (let i = 37; i < files; i += 100) {
    const p = join(root, scalePath(i));
    const before = await readFile(p);
    originals.push([p, before]);
    await writeFile(p, Buffer.concat([before, Buffer.from(`// changed ${i}\n`)]));
  }
  return {
    undo: async () => {
      for (const [p, b] of originals) await writeFile(p, b);
    },
  };
}

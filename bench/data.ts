import { createHash } from 'node:crypto';
import { cp, lstat, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Benchmark data, generated deterministically (same seed, same bytes) and kept between runs:
 *  (a) ~20,000 small source-like text files, ~250 MB, in ~1,000 directories, 5% duplicates;
 *  (b) 1 GiB of incompressible bytes;
 *  (c) an edit of 1% of the files of (a), applied and reverted around the incremental backup;
 *  (r) a real tree: a copy of the project's node_modules (symlinks dropped) plus 256 MiB of
 *      incompressible bytes.
 */
export const SMALL_FILES = 20_000;
export const SMALL_TOTAL = 250_000_000;
export const LARGE_BYTES = 1024 * 1024 * 1024;

/** mulberry32: a small, fast, seedable PRNG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYWORDS = ['const', 'let', 'function', 'return', 'if', 'else', 'for', 'while', 'import', 'export', 'from', 'class', 'new', 'await', 'async', 'try', 'catch', 'throw', 'interface', 'type', 'extends', 'implements', 'null', 'undefined', 'true', 'false', 'this', 'switch', 'case', 'break'];
const PUNCT = ['(', ')', '{', '}', '[', ']', ';', ',', '.', ' = ', ' === ', ' + ', ' - ', ' * ', ' => ', ': ', ' && ', ' || ', '!', '?'];

export function vocabulary(rand: () => number, n: number): string[] {
  const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_';
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    let w = '';
    const len = 3 + Math.floor(rand() * 12);
    for (let j = 0; j < len; j++) w += letters[Math.floor(rand() * letters.length)];
    out.push(w);
  }
  return out;
}

/** A line of source-like text: indentation, keywords, identifiers, numbers, strings and comments. */
function line(rand: () => number, vocab: string[]): string {
  const indent = '  '.repeat(Math.floor(rand() * 5));
  const r = rand();
  if (r < 0.08) return `${indent}// ${Array.from({ length: 3 + Math.floor(rand() * 10) }, () => vocab[Math.floor(rand() * vocab.length)]).join(' ')}`;
  if (r < 0.12) return '';
  let s = indent;
  const tokens = 3 + Math.floor(rand() * 12);
  for (let i = 0; i < tokens; i++) {
    const t = rand();
    if (t < 0.2) s += `${KEYWORDS[Math.floor(rand() * KEYWORDS.length)]} `;
    else if (t < 0.6) s += vocab[Math.floor(rand() ** 2 * vocab.length)]!;
    else if (t < 0.7) s += String(Math.floor(rand() * 100000));
    else if (t < 0.75) s += `'${vocab[Math.floor(rand() * vocab.length)]}'`;
    else s += PUNCT[Math.floor(rand() * PUNCT.length)];
  }
  return s;
}

export function textOf(rand: () => number, vocab: string[], bytes: number): string {
  const lines: string[] = [];
  let n = 0;
  while (n < bytes) {
    const l = line(rand, vocab);
    lines.push(l);
    n += l.length + 1;
  }
  return `${lines.join('\n')}\n`.slice(0, Math.max(bytes, 1));
}

export interface SmallFile {
  path: string; // relative to the (a) root
  size: number;
}

/** The file list of (a): log-normal sizes (median ~5 KB, a few up to 2 MB), scaled to the total. */
export function smallFilePlan(): SmallFile[] {
  const rand = prng(42);
  const raw: number[] = [];
  for (let i = 0; i < SMALL_FILES; i++) {
    const u = Math.max(rand(), 1e-9);
    const v = rand();
    const normal = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    raw.push(Math.min(Math.exp(Math.log(5000) + 1.3 * normal), 2_000_000));
  }
  const scale = SMALL_TOTAL / raw.reduce((a, b) => a + b, 0);
  const exts = ['.ts', '.js', '.go', '.py', '.md', '.json', '.c', '.h', '.txt', '.css'];
  return raw.map((r, i) => {
    const pkg = Math.floor(i / 400);
    const mod = Math.floor(i / 20) % 20;
    return { path: `pkg${String(pkg).padStart(2, '0')}/src/mod${String(mod).padStart(2, '0')}/file${i}${exts[i % exts.length]}`, size: Math.max(1, Math.round(r * scale)) };
  });
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(() => true, () => false);
}

export async function generateSmall(root: string): Promise<void> {
  const marker = join(root, '..', 'a.done');
  if (await exists(marker)) return;
  await rm(root, { recursive: true, force: true });
  const plan = smallFilePlan();
  const rand = prng(7);
  const vocab = vocabulary(rand, 4000);
  const contents: string[] = [];
  const dirs = new Set(plan.map((f) => join(root, f.path, '..')));
  for (const d of dirs) await mkdir(d, { recursive: true });
  for (let i = 0; i < plan.length; i += 200) {
    await Promise.all(
      plan.slice(i, i + 200).map((f, j) => {
        const index = i + j;
        // 5% are copies of an earlier file (vendored or generated duplicates).
        const dup = index > 100 && rand() < 0.05 ? contents[Math.floor(rand() * contents.length)] : undefined;
        const text = dup ?? textOf(rand, vocab, f.size);
        if (contents.length < 2000) contents.push(text);
        return writeFile(join(root, f.path), text);
      }),
    );
  }
  await writeFile(marker, '');
}

/** `bytes` (a multiple of 8 MiB) of counter-mode SHA-256 output: incompressible, reproducible, fast enough. */
async function writeRandom(path: string, bytes: number, seed: string): Promise<void> {
  const fh = await open(path, 'w');
  const block = Buffer.alloc(8 * 1024 * 1024);
  let counter = 0;
  for (let done = 0; done < bytes; done += block.length) {
    for (let o = 0; o < block.length; o += 32) createHash('sha256').update(`${seed}-${counter++}`).digest().copy(block, o);
    await fh.write(block, 0, block.length, done);
  }
  await fh.close();
}

export async function generateLarge(root: string): Promise<void> {
  const marker = join(root, '..', 'b.done');
  if (await exists(marker)) return;
  await rm(root, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  await writeRandom(join(root, 'random.bin'), LARGE_BYTES, 'b');
  await writeFile(marker, '');
}

export const REAL_RANDOM_BYTES = 256 * 1024 * 1024;

/** (r): a copy of `nodeModules` without its symlinks, and 256 MiB of incompressible bytes beside it. */
export async function generateRealTree(root: string, nodeModules: string): Promise<void> {
  const marker = join(root, '..', 'r.done');
  if (await exists(marker)) return;
  await rm(root, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  await cp(nodeModules, join(root, 'node_modules'), {
    recursive: true,
    preserveTimestamps: true,
    filter: async (src) => !(await lstat(src)).isSymbolicLink(),
  });
  await writeRandom(join(root, 'random.bin'), REAL_RANDOM_BYTES, 'r');
  await writeFile(marker, '');
}

/**
 * Changes 1% of the files of (a) (every 100th, from the `nth` of each hundred: another 1% for
 * each of nth 0–99): one line in the middle replaced, one appended. Returns an undo.
 */
export async function editOnePercent(root: string, nth = 0): Promise<{ files: number; undo: () => Promise<void> }> {
  const plan = smallFilePlan();
  const originals: [string, Buffer][] = [];
  const rand = prng(99 + nth);
  for (let i = nth; i < plan.length; i += 100) {
    const p = join(root, plan[i]!.path);
    const before = await readFile(p);
    originals.push([p, before]);
    const text = before.toString('utf8');
    const mid = text.indexOf('\n', Math.floor(text.length / 2));
    const edited = mid < 0 ? `${text}// edited ${rand()}\n` : `${text.slice(0, mid)}\n// edited ${rand()}${text.slice(mid)}// appended\n`;
    await writeFile(p, edited);
  }
  return {
    files: originals.length,
    undo: async () => {
      for (const [p, b] of originals) await writeFile(p, b);
    },
  };
}

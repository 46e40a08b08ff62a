/**
 * Restore benchmark: restores only, side by side, from backups taken once.
 *   npm run bench:restore -- [--sets r,s] [--files 100000] [--runs 3] [--tools ours,ours@../main,restic] [--dir .bench]
 * Data sets: (r) the real tree of bench:engine (node_modules plus 256 MiB random), (s) bench:scale's
 * tree of `--files` small files. Each tool backs each set up once (not timed; its repository is
 * kept in <dir>/restore/ for later runs, shared by every `ours@<checkout>`) and read once (so
 * that no restore pays for reading it from disk while the others find it cached); then every round
 * restores it with each tool back to back (the order rotating), into a new directory, `sync`
 * before each. Wall time here, CPU time and peak RSS from GNU time; median [min–max] over the
 * rounds and the ratio of the medians to restic's, with the load average at each restore.
 * The restored trees are removed only at the end (bench/fs-state.ts says why).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { generateRealTree } from './data.ts';
import { RestoreTargets, warmTree } from './fs-state.ts';
import { generateScaleTree } from './scale-data.ts';
import { ensureInstalled, have, median, ours, restic, version } from './tools.ts';
import type { Measure, Tool } from './tools.ts';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    sets: { type: 'string', default: 'r,s' },
    files: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '3' },
    tools: { type: 'string', default: 'ours,restic' },
    dir: { type: 'string', default: join(root, '.bench') },
  },
});
const base = resolve(values.dir);
const runs = Number(values.runs);
const files = Number(values.files);

const SETS: Record<string, { label: string; dir: string; generate: (dir: string) => Promise<void> }> = {
  r: { label: '(r) real tree', dir: join(base, 'data', 'r'), generate: (dir) => generateRealTree(dir, join(root, 'node_modules')) },
  s: { label: `(s) ${files.toLocaleString('en')} small files`, dir: join(base, 'scale', 'data', `tree-${files}`), generate: (dir) => generateScaleTree(dir, files) },
};

/** `ours@<checkout>` restores with another checkout's engine from the same repository as `ours`. */
function toolOf(spec: string): { tool: Tool; family: string } {
  const [name, checkout] = spec.split('@');
  if (name === 'ours') return { tool: { ...ours(checkout ? resolve(checkout) : root), name: spec }, family: 'ours' };
  if (name === 'restic') return { tool: restic(), family: 'restic' };
  throw new Error(`unknown tool ${spec} (ours, ours@<checkout>, restic)`);
}

async function main(): Promise<void> {
  const tools = values.tools.split(',').map((t) => toolOf(t.trim()));
  if (tools.some((t) => t.family === 'restic')) ensureInstalled();
  const sets = values.sets.split(',').map((s) => {
    const set = SETS[s.trim()];
    if (!set) throw new Error(`unknown data set ${s} (r, s)`);
    return { name: s.trim() === 's' ? `s${files}` : s.trim(), ...set };
  });
  const work = join(base, 'restore');
  const targets = await RestoreTargets.open(join(work, 'targets'));
  const rows: string[] = [];
  for (const set of sets) {
    await set.generate(set.dir);
    const snapshots = new Map<string, string>();
    for (const { family, tool } of tools) {
      if (snapshots.has(family)) continue;
      const repo = join(work, `${family}-${set.name}`);
      const home = join(work, `${family}-home`);
      const snapFile = `${repo}.snapshot`;
      if (!existsSync(snapFile)) {
        console.log(`backing ${set.name} up with ${family} (once, kept in ${repo})`);
        await rm(repo, { recursive: true, force: true });
        await mkdir(home, { recursive: true });
        await tool.init(repo, home);
        await writeFile(snapFile, (await tool.backup(repo, set.dir, home)).snapshot);
      }
      snapshots.set(family, (await readFile(snapFile, 'utf8')).trim());
    }
    // Every repository read once before the rounds: the first restore does not pay for reading from disk what the others find cached.
    for (const family of snapshots.keys()) warmTree(join(work, `${family}-${set.name}`));
    const samples = new Map<string, (Measure & { load: number })[]>(tools.map(({ tool }) => [tool.name, []]));
    for (let r = 0; r < runs; r++) {
      for (let i = 0; i < tools.length; i++) {
        const { tool, family } = tools[(i + r) % tools.length]!;
        const home = join(work, `${family}-home`);
        const target = targets.next(`${set.name}-${r}-${i}`);
        await mkdir(home, { recursive: true });
        const load = loadavg()[0]!;
        const m = await tool.restore(join(work, `${family}-${set.name}`), snapshots.get(family)!, target, home);
        samples.get(tool.name)!.push({ ...m, load });
        console.log(`  ${set.name} round ${r + 1} ${tool.name}: ${m.seconds.toFixed(2)} s, CPU ${m.cpuSeconds.toFixed(2)} s, ${m.rssMb.toFixed(0)} MB (load ${load.toFixed(1)})`);
      }
    }
    const ref = samples.has('restic') ? 'restic' : null;
    const cell = (name: string, f: (m: Measure) => number, digits: number): string => {
      const xs = samples.get(name)!.map(f);
      const ratio = ref ? ` (${(median(xs) / median(samples.get(ref)!.map(f))).toFixed(2)}×)` : '';
      return `${median(xs).toFixed(digits)}${ratio} [${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}]`;
    };
    const names = tools.map(({ tool }) => tool.name);
    rows.push(`| ${set.label}: wall time, s | ${names.map((n) => cell(n, (m) => m.seconds, 2)).join(' | ')} |`);
    rows.push(`| CPU time (user + system), s | ${names.map((n) => cell(n, (m) => m.cpuSeconds, 2)).join(' | ')} |`);
    rows.push(`| peak RSS, MB | ${names.map((n) => cell(n, (m) => m.rssMb, 0)).join(' | ')} |`);
    rows.push(`| load average at each restore | ${names.map((n) => samples.get(n)!.map((m) => m.load.toFixed(1)).join(', ')).join(' | ')} |`);
  }
  await targets.removeAll();
  const names = tools.map(({ tool }) => tool.name);
  const report = [
    `${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${version('uname', ['-r'])}; node ${process.version}${have('restic') ? `; ${version('restic', ['version'])}` : ''}`,
    `restores only, median of ${runs} round(s) [min–max]; in parentheses the ratio of the medians to restic's`,
    '',
    `| restore | ${names.join(' | ')} |`,
    `|---|${names.map(() => '---').join('|')}|`,
    ...rows,
  ].join('\n');
  console.log(`\n${report}`);
  await mkdir(work, { recursive: true });
  await writeFile(join(work, 'results.md'), `${report}\n`);
}

await main();

/**
 * Engine benchmark: ours against restic and borg on the same generated data, same machine, same run.
 *   npm run bench:engine -- [--runs 3] [--tools ours,restic,borg] [--dir .bench]
 * Each figure is the median over the runs; every process's peak RSS comes from GNU time.
 * Data: (a) ~20,000 source-like files (~250 MB), (b) 1 GiB incompressible, (c) a second
 * backup of (a) after 1% of its files changed.
 */
import { execFileSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { editOnePercent, generateLarge, generateSmall } from './data.ts';
import { borg, dirBytes, ours, restic } from './tools.ts';
import type { Tool } from './tools.ts';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    tools: { type: 'string', default: 'ours,restic,borg' },
    dir: { type: 'string', default: join(root, '.bench') },
  },
});
const runs = Number(values.runs);
const base = resolve(values.dir);

function have(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function ensureInstalled(): void {
  const missing = [['restic', 'restic'], ['borg', 'borgbackup'], ['/usr/bin/time', 'time']].filter(([cmd]) => !have(cmd!)).map(([, pkg]) => pkg!);
  if (missing.length === 0) return;
  console.log(`installing ${missing.join(', ')} with apt-get`);
  execFileSync('apt-get', ['update'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', ...missing], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

function version(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8' }).trim().split('\n')[0]!;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

type Metric = 'backup_a' | 'backup_b' | 'incremental_c' | 'restore_a' | 'restore_b' | 'repo_a' | 'repo_b' | 'rss' | 'cpu_backup_a' | 'cpu_backup_b';
const LABELS: Record<Metric, string> = {
  backup_a: 'backup (a) 20k files, s',
  backup_b: 'backup (b) 1 GiB random, s',
  incremental_c: 'incremental (c) 1% changed, s',
  restore_a: 'restore (a), s',
  restore_b: 'restore (b), s',
  repo_a: 'repository (a)+(c), MB',
  repo_b: 'repository (b), MB',
  rss: 'peak RSS, MB',
  cpu_backup_a: 'CPU time of backup (a), s',
  cpu_backup_b: 'CPU time of backup (b), s',
};

async function runOnce(tool: Tool, run: number, dataA: string, dataB: string): Promise<Record<Metric, number>> {
  const work = join(base, 'work', tool.name);
  await rm(work, { recursive: true, force: true });
  const home = join(work, 'home');
  await mkdir(home, { recursive: true });
  const repoA = join(work, 'repo-a');
  const repoB = join(work, 'repo-b');
  const target = join(work, 'target');
  let rss = 0;
  const track = <T extends { rssMb: number }>(m: T): T => {
    rss = Math.max(rss, m.rssMb);
    return m;
  };

  await tool.init(repoA, home);
  const a = track(await tool.backup(repoA, dataA, home));
  const restoreA = track(await tool.restore(repoA, a.snapshot, target, home));
  await rm(target, { recursive: true, force: true });
  const edit = await editOnePercent(dataA);
  let incremental;
  try {
    incremental = track(await tool.backup(repoA, dataA, home));
  } finally {
    await edit.undo();
  }
  const repoASize = await dirBytes(repoA);
  await rm(repoA, { recursive: true, force: true });

  await tool.init(repoB, home);
  const b = track(await tool.backup(repoB, dataB, home));
  const repoBSize = await dirBytes(repoB);
  const restoreB = track(await tool.restore(repoB, b.snapshot, target, home));
  await rm(work, { recursive: true, force: true });

  const result = {
    backup_a: a.seconds,
    backup_b: b.seconds,
    incremental_c: incremental.seconds,
    restore_a: restoreA.seconds,
    restore_b: restoreB.seconds,
    repo_a: repoASize / 1e6,
    repo_b: repoBSize / 1e6,
    rss,
    cpu_backup_a: a.cpuSeconds,
    cpu_backup_b: b.cpuSeconds,
  };
  console.log(`run ${run} ${tool.name}: ${Object.entries(result).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ')}`);
  return result;
}

async function main(): Promise<void> {
  ensureInstalled();
  const dataA = join(base, 'data', 'a');
  const dataB = join(base, 'data', 'b');
  console.log('generating data (kept in', join(base, 'data'), 'for later runs)');
  await generateSmall(dataA);
  await generateLarge(dataB);

  const all: Record<string, Tool> = { ours: ours(root), restic: restic(), borg: borg() };
  const tools = values.tools.split(',').map((n) => {
    const t = all[n.trim()];
    if (!t) throw new Error(`unknown tool ${n}`);
    return t;
  });
  const samples = new Map<string, Record<Metric, number>[]>(tools.map((t) => [t.name, []]));
  for (let run = 1; run <= runs; run++) {
    for (const tool of tools) samples.get(tool.name)!.push(await runOnce(tool, run, dataA, dataB));
  }

  const medians = new Map([...samples].map(([name, rs]) => [name, Object.fromEntries((Object.keys(LABELS) as Metric[]).map((m) => [m, median(rs.map((r) => r[m]))])) as Record<Metric, number>]));
  const ref = medians.get('restic');
  const names = tools.map((t) => t.name);
  const rows = (Object.keys(LABELS) as Metric[]).map((m) => {
    const cells = names.map((n) => {
      const v = medians.get(n)![m];
      const digits = m === 'rss' || m.startsWith('repo') ? 0 : 2;
      return ref ? `${v.toFixed(digits)} (${(v / ref[m]).toFixed(2)}×)` : v.toFixed(digits);
    });
    return `| ${LABELS[m]} | ${cells.join(' | ')} |`;
  });
  const machine = [
    `${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${version('uname', ['-r'])}`,
    `node ${process.version}; ${have('restic') ? version('restic', ['version']) : ''}; ${have('borg') ? version('borg', ['--version']) : ''}`,
    `median of ${runs} run(s); figures in parentheses are ratios to restic (lower is better)`,
  ];
  const table = [`| metric | ${names.join(' | ')} |`, `|---|${names.map(() => '---').join('|')}|`, ...rows].join('\n');
  const report = `${machine.join('\n')}\n\n${table}\n`;
  console.log(`\n${report}`);
  await writeFile(join(base, 'results.md'), report);
  await writeFile(join(base, 'results.json'), JSON.stringify({ machine, runs, samples: Object.fromEntries(samples) }, null, 2));
}

await main();

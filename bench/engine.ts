/**
 * Engine benchmark: ours against restic and borg on the same generated data, same machine, same run.
 *   npm run bench:engine -- [--runs 3] [--tools ours,restic,borg] [--dir .bench]
 * Each figure is the median over the runs; within a run every step is taken by each tool
 * back to back (order rotating). Peak RSS and CPU time of every process come from GNU time.
 * Data: (a) ~20,000 source-like files (~250 MB), (b) 1 GiB incompressible, (c) a second
 * backup of (a) after 1% of its files changed.
 */
import { cpus, totalmem } from 'node:os';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { editOnePercent, generateLarge, generateSmall } from './data.ts';
import { borg, dirBytes, ensureInstalled, have, median, ours, restic, version } from './tools.ts';
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

/**
 * One round: every step is run by each tool back to back (the order rotating from round to
 * round), so a burst of other load on the machine hits all tools alike.
 */
async function runRound(tools: Tool[], round: number, dataA: string, dataB: string): Promise<Map<string, Record<Metric, number>>> {
  const order = tools.map((_, i) => tools[(i + round) % tools.length]!);
  const state = new Map<string, { work: string; home: string; repoA: string; repoB: string; target: string; snapA: string; snapB: string; r: Record<Metric, number> }>();
  for (const tool of order) {
    const work = join(base, 'work', tool.name);
    await rm(work, { recursive: true, force: true });
    const home = join(work, 'home');
    await mkdir(home, { recursive: true });
    state.set(tool.name, {
      work,
      home,
      repoA: join(work, 'repo-a'),
      repoB: join(work, 'repo-b'),
      target: join(work, 'target'),
      snapA: '',
      snapB: '',
      r: { backup_a: 0, backup_b: 0, incremental_c: 0, restore_a: 0, restore_b: 0, repo_a: 0, repo_b: 0, rss: 0, cpu_backup_a: 0, cpu_backup_b: 0 },
    });
  }
  const each = async (step: (tool: Tool, st: ReturnType<typeof state.get> & object) => Promise<void>): Promise<void> => {
    for (const tool of order) await step(tool, state.get(tool.name)!);
  };
  const track = (st: { r: Record<Metric, number> }, m: { rssMb: number }): void => {
    st.r.rss = Math.max(st.r.rss, m.rssMb);
  };

  await each((t, st) => t.init(st.repoA, st.home));
  await each(async (t, st) => {
    const m = await t.backup(st.repoA, dataA, st.home);
    track(st, m);
    st.snapA = m.snapshot;
    st.r.backup_a = m.seconds;
    st.r.cpu_backup_a = m.cpuSeconds;
  });
  await each(async (t, st) => {
    const m = await t.restore(st.repoA, st.snapA, st.target, st.home);
    track(st, m);
    st.r.restore_a = m.seconds;
    await rm(st.target, { recursive: true, force: true });
  });
  const edit = await editOnePercent(dataA);
  try {
    await each(async (t, st) => {
      const m = await t.backup(st.repoA, dataA, st.home);
      track(st, m);
      st.r.incremental_c = m.seconds;
    });
  } finally {
    await edit.undo();
  }
  await each(async (t, st) => {
    st.r.repo_a = (await dirBytes(st.repoA)) / 1e6;
    await rm(st.repoA, { recursive: true, force: true });
  });
  await each((t, st) => t.init(st.repoB, st.home));
  await each(async (t, st) => {
    const m = await t.backup(st.repoB, dataB, st.home);
    track(st, m);
    st.snapB = m.snapshot;
    st.r.backup_b = m.seconds;
    st.r.cpu_backup_b = m.cpuSeconds;
    st.r.repo_b = (await dirBytes(st.repoB)) / 1e6;
  });
  await each(async (t, st) => {
    const m = await t.restore(st.repoB, st.snapB, st.target, st.home);
    track(st, m);
    st.r.restore_b = m.seconds;
    await rm(st.work, { recursive: true, force: true });
  });
  const out = new Map<string, Record<Metric, number>>();
  for (const tool of tools) {
    const r = state.get(tool.name)!.r;
    console.log(`round ${round + 1} ${tool.name}: ${Object.entries(r).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ')}`);
    out.set(tool.name, r);
  }
  return out;
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
  for (let round = 0; round < runs; round++) {
    const results = await runRound(tools, round, dataA, dataB);
    for (const tool of tools) samples.get(tool.name)!.push(results.get(tool.name)!);
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
    `median of ${runs} run(s), each step run by every tool back to back; figures in parentheses are ratios to restic (lower is better)`,
  ];
  const table = [`| metric | ${names.join(' | ')} |`, `|---|${names.map(() => '---').join('|')}|`, ...rows].join('\n');
  const report = `${machine.join('\n')}\n\n${table}\n`;
  console.log(`\n${report}`);
  await writeFile(join(base, 'results.md'), report);
  await writeFile(join(base, 'results.json'), JSON.stringify({ machine, runs, samples: Object.fromEntries(samples) }, null, 2));
}

await main();

/**
 * Engine benchmark: ours against restic and borg on the same generated data, same machine, same run.
 *   npm run bench:engine -- [--runs 3] [--tools ours,restic,borg] [--sets a,b,r] [--dir .bench] [--via-service]
 * (`--tools ours,ours@../other-checkout,restic` adds another checkout's engine, for with/without;
 * `--via-service` adds the tool `service`: the same engine through the running server, each job
 * timed from its request to `completed`, see service.ts; `--tools service@../other-checkout`
 * runs another checkout's server the same way.)
 * Within a round every step is taken by each tool back to back (order rotating); each figure is
 * reported as the median over the rounds with min and max, and each tool's ratio to restic (and
 * the service's to ours) also round by round. Wall time is measured here; peak RSS and CPU time
 * of every process come from GNU time.
 * Data sets: (a) ~20,000 source-like files (~250 MB), with (c) a further backup after 1% of its
 * files changed (three a round, see INCREMENTALS); (b) 1 GiB incompressible; (r) a real tree: a
 * copy of this project's node_modules (symlinks dropped) plus 256 MiB incompressible.
 */
import { cpus, totalmem } from 'node:os';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { editOnePercent, generateLarge, generateRealTree, generateSmall } from './data.ts';
import { RestoreTargets } from './fs-state.ts';
import { service } from './service.ts';
import { borg, dirBytes, ensureInstalled, have, median, ours, restic, version } from './tools.ts';
import type { Measure, Tool } from './tools.ts';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    tools: { type: 'string', default: 'ours,restic,borg' },
    sets: { type: 'string', default: 'a,b,r' },
    dir: { type: 'string', default: join(root, '.bench') },
    'via-service': { type: 'boolean', default: false },
  },
});
const runs = Number(values.runs);
const base = resolve(values.dir);

interface DataSet {
  name: 'a' | 'b' | 'r';
  label: string;
  dir: string;
  generate: (dir: string) => Promise<void>;
}

/**
 * Incremental backups (c) a round, each after another 1% of (a) was changed, every tool backing up
 * each in turn; the round's figure is their median. Timed once a round, a backup of about a second
 * moved with the machine's load by more than its goal's margin (ours ÷ restic 0.48, 0.76 and 0.55
 * in the three rounds of one run).
 */
const INCREMENTALS = 3;

type Metric = string;
type Sample = Record<Metric, number>;

/** The rows of the table, in order, for the data sets chosen. */
function labels(sets: DataSet[]): [Metric, string][] {
  const rows: [Metric, string][] = [];
  for (const d of sets) {
    rows.push([`backup_${d.name}`, `backup (${d.name}) ${d.label}, s`]);
    if (d.name === 'a') rows.push(['incremental_c', `incremental (c) 1% of (a) changed, median of ${INCREMENTALS} a round, s`]);
    rows.push([`restore_${d.name}`, `restore (${d.name}), s`]);
  }
  for (const d of sets) rows.push([`repo_${d.name}`, `repository (${d.name}${d.name === 'a' ? `)+${INCREMENTALS}×(c` : ''}), MB`]);
  for (const d of sets) {
    rows.push([`cpu_backup_${d.name}`, `CPU time of backup (${d.name}), s`]);
    rows.push([`cpu_restore_${d.name}`, `CPU time of restore (${d.name}), s`]);
  }
  for (const d of sets) {
    rows.push([`rss_backup_${d.name}`, `peak RSS of backup (${d.name}), MB`]);
    rows.push([`rss_restore_${d.name}`, `peak RSS of restore (${d.name}), MB`]);
  }
  return rows;
}

/**
 * One round: every step is run by each tool back to back (the order rotating from round to
 * round), so a burst of other load on the machine hits all tools alike.
 */
async function runRound(tools: Tool[], round: number, sets: DataSet[], targets: RestoreTargets): Promise<Map<string, Sample>> {
  const order = tools.map((_, i) => tools[(i + round) % tools.length]!);
  const state = new Map<string, { work: string; home: string; r: Sample }>();
  for (const tool of order) {
    const work = join(base, 'work', tool.name.replace(/[^\w.-]/g, '_'));
    await rm(work, { recursive: true, force: true });
    const home = join(work, 'home');
    await mkdir(home, { recursive: true });
    state.set(tool.name, { work, home, r: {} });
  }
  type State = ReturnType<typeof state.get> & object;
  const each = async (step: (tool: Tool, st: State) => Promise<void>): Promise<void> => {
    for (const tool of order) await step(tool, state.get(tool.name)!);
  };
  const record = (st: State, step: string, m: Measure): void => {
    st.r[step] = m.seconds;
    st.r[`cpu_${step}`] = m.cpuSeconds;
    st.r[`rss_${step}`] = m.rssMb;
  };

  for (const d of sets) {
    const repo = (st: State): string => join(st.work, `repo-${d.name}`);
    const snapshots = new Map<string, string>();
    await each((t, st) => t.init(repo(st), st.home));
    await each(async (t, st) => {
      const m = await t.backup(repo(st), d.dir, st.home);
      snapshots.set(t.name, m.snapshot);
      record(st, `backup_${d.name}`, m);
    });
    await each(async (t, st) => {
      // Restored trees are kept until the end of the run (fs-state.ts).
      record(st, `restore_${d.name}`, await t.restore(repo(st), snapshots.get(t.name)!, targets.next(`${t.name}-${d.name}`), st.home));
    });
    if (d.name === 'a') {
      const edits: Awaited<ReturnType<typeof editOnePercent>>[] = [];
      const times = new Map<string, number[]>(tools.map((t) => [t.name, []]));
      try {
        for (let k = 0; k < INCREMENTALS; k++) {
          edits.push(await editOnePercent(d.dir, k * 33));
          await each(async (t, st) => {
            times.get(t.name)!.push((await t.backup(repo(st), d.dir, st.home)).seconds);
          });
        }
      } finally {
        for (const edit of edits) await edit.undo();
      }
      await each(async (t, st) => {
        st.r.incremental_c = median(times.get(t.name)!);
      });
    }
    await each(async (_t, st) => {
      st.r[`repo_${d.name}`] = (await dirBytes(repo(st))) / 1e6;
      await rm(repo(st), { recursive: true, force: true });
    });
  }
  const out = new Map<string, Sample>();
  for (const tool of tools) {
    const st = state.get(tool.name)!;
    await rm(st.work, { recursive: true, force: true });
    console.log(`round ${round + 1} ${tool.name}: ${Object.entries(st.r).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ')}`);
    out.set(tool.name, st.r);
  }
  return out;
}

async function main(): Promise<void> {
  ensureInstalled();
  const all: DataSet[] = [
    { name: 'a', label: '20k files', dir: join(base, 'data', 'a'), generate: generateSmall },
    { name: 'b', label: '1 GiB random', dir: join(base, 'data', 'b'), generate: generateLarge },
    { name: 'r', label: 'real tree', dir: join(base, 'data', 'r'), generate: (dir) => generateRealTree(dir, join(root, 'node_modules')) },
  ];
  const sets = values.sets.split(',').map((n) => {
    const d = all.find((s) => s.name === n.trim());
    if (!d) throw new Error(`unknown data set ${n} (a, b, r)`);
    return d;
  });
  console.log('generating data (kept in', join(base, 'data'), 'for later runs)');
  for (const d of sets) await d.generate(d.dir);

  // `ours@<checkout>`: the engine of another checkout (say, main), for a with/without comparison in one run.
  const tools = values.tools.split(',').map((n) => {
    const [name, checkout] = n.trim().split('@');
    if (name === 'ours' && checkout) return { ...ours(resolve(checkout)), name: n.trim() };
    if (name === 'service') return { ...service(checkout ? resolve(checkout) : root), name: n.trim() };
    const t = ({ ours: ours(root), restic: restic(), borg: borg() } as Record<string, Tool>)[name!];
    if (!t) throw new Error(`unknown tool ${n}`);
    return t;
  });
  if (values['via-service'] && !tools.some((t) => t.name === 'service')) tools.push(service(root));
  const names = tools.map((t) => t.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new Error(`tool ${twice} is named twice (each tool works in a directory of its own name)`);
  const samples = new Map<string, Sample[]>(tools.map((t) => [t.name, []]));
  const targets = await RestoreTargets.open(join(base, 'targets'));
  for (let round = 0; round < runs; round++) {
    const results = await runRound(tools, round, sets, targets);
    for (const tool of tools) samples.get(tool.name)!.push(results.get(tool.name)!);
  }
  await targets.removeAll();

  const rows = labels(sets);
  const stat = (name: string, m: Metric) => {
    const xs = samples.get(name)!.map((r) => r[m]!);
    return { min: Math.min(...xs), median: median(xs), max: Math.max(...xs) };
  };
  const ref = samples.has('restic') ? 'restic' : undefined;
  const lines = rows.map(([m, label]) => {
    const digits = m.startsWith('rss') || m.startsWith('repo') ? 0 : 2;
    const cells = names.map((n) => {
      const s = stat(n, m);
      const ratio = ref ? ` (${(s.median / stat(ref, m).median).toFixed(2)}×)` : '';
      const range = runs > 1 ? ` [${s.min.toFixed(digits)}–${s.max.toFixed(digits)}]` : '';
      return `${s.median.toFixed(digits)}${ratio}${range}`;
    });
    return `| ${label} | ${cells.join(' | ')} |`;
  });
  // Each round's steps run back to back, so a ratio taken within the round is not moved by the
  // machine's speed drifting between rounds (on a shared machine it does, by more than a goal's
  // margin); the medians above may come from different rounds.
  const pairs: Array<[string, string]> = ref ? names.filter((n) => n !== ref).map((n) => [n, ref]) : [];
  if (names.includes('service') && names.includes('ours')) pairs.push(['service', 'ours']);
  const perRound = (num: string, den: string, m: Metric) => samples.get(num)!.map((r, i) => r[m]! / samples.get(den)![i]![m]!);
  const roundRows = rows.map(([m, label]) => {
    const cells = pairs.map(([num, den]) => {
      const xs = perRound(num, den, m);
      return `${median(xs).toFixed(2)}× [${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}]`;
    });
    return `| ${label} | ${cells.join(' | ')} |`;
  });
  const roundTable = pairs.length === 0 || runs < 2 ? [] : [
    [
      `Round by round: each ratio taken within one round, median [min–max] of the ${runs} rounds`,
      '',
      `| metric | ${pairs.map(([num, den]) => `${num} ÷ ${den}`).join(' | ')} |`,
      `|---|${pairs.map(() => '---').join('|')}|`,
      ...roundRows,
    ].join('\n'),
  ];
  const machine = [
    `${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${version('uname', ['-r'])}`,
    `node ${process.version}; ${have('restic') ? version('restic', ['version']) : ''}; ${have('borg') ? version('borg', ['--version']) : ''}`,
    `median of ${runs} run(s) [min–max], each step run by every tool back to back; in parentheses the ratio of the medians to restic's (lower is better)`,
  ];
  const table = [`| metric | ${names.join(' | ')} |`, `|---|${names.map(() => '---').join('|')}|`, ...lines].join('\n');
  const report = `${[machine.join('\n'), table, ...roundTable].join('\n\n')}\n`;
  console.log(`\n${report}`);
  await writeFile(join(base, 'results.md'), report);
  await writeFile(join(base, 'results.json'), JSON.stringify({ machine, runs, samples: Object.fromEntries(samples) }, null, 2));
}

await main();

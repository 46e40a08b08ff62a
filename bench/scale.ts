/**
 * Scale benchmark: how backup, restore and listing cost grow with the number of files.
 *   npm run bench:scale -- [--files 100000,1000000] [--runs 1] [--tools ours,restic,borg] [--pages 100] [--dir .bench]
 *                          [--steps backup,unchanged,changed,restore]
 * A tool `ours@<checkout>` is the engine of another checkout (its own node_modules), beside this one.
 * `--pages 0` leaves the service's listing out; `--steps` takes a subset of the steps (the full
 * backup always runs: the others start from it).
 * For each tree (N small text files of 1-4 KiB, 100 to a directory, generated deterministically
 * and kept between runs): a full backup, an unchanged re-backup, a 1%-changed re-backup and a
 * restore, each step taken by every tool back to back (the order rotating per round), with wall
 * time, CPU time and peak RSS from GNU time and the load average at its start; medians over the
 * rounds. Before each tool's step its input (the tree, or the repository for a restore) is read
 * into the page cache, so that no tool reads it colder for having gone first; the restored trees
 * are kept until the end of the run (see fs-state.ts). Then, for the service, the
 * listing: the tree backed up through the real app (`node bench/http.ts --serve`, as `npm start`
 * builds it) and `--pages` GET /files requests (half first pages of a random top directory,
 * half the page after), p50 and p99 per page.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { RestoreTargets, warmTree } from './fs-state.ts';
import { changeOnePercent, generateScaleTree, PER_DIR } from './scale-data.ts';
import { runJob, startService } from './service.ts';
import { borg, dirBytes, ensureInstalled, have, median, ours, restic, version } from './tools.ts';
import type { Measure, Tool } from './tools.ts';
import { prng } from './data.ts';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '100000,1000000' },
    runs: { type: 'string', default: '1' },
    tools: { type: 'string', default: 'ours,restic,borg' },
    pages: { type: 'string', default: '100' },
    steps: { type: 'string', default: 'backup,unchanged,changed,restore' },
    dir: { type: 'string', default: join(root, '.bench') },
  },
});
const sizes = values.files.split(',').map(Number);
const runs = Number(values.runs);
const base = join(resolve(values.dir), 'scale');

const ALL_STEPS = ['backup', 'unchanged', 'changed', 'restore'] as const;
type Step = (typeof ALL_STEPS)[number];
const STEPS = ALL_STEPS.filter((s) => s === 'backup' || values.steps.split(',').includes(s));
type Sample = Record<Step, Measure & { load: number }> & { repoMb: number };

async function round(tools: Tool[], n: number, data: string, r: number, targets: RestoreTargets): Promise<Map<string, Sample>> {
  const order = tools.map((_, i) => tools[(i + r) % tools.length]!);
  const dir = (t: Tool): string => join(base, 'work', t.name.replace(/[^\w.-]+/g, '_'));
  const work = (t: Tool): { home: string; repo: string } => ({ home: join(dir(t), 'home'), repo: join(dir(t), 'repo') });
  const out = new Map<string, Partial<Sample>>(tools.map((t) => [t.name, {}]));
  const snapshots = new Map<string, string>();
  for (const t of order) {
    await rm(dir(t), { recursive: true, force: true });
    await mkdir(work(t).home, { recursive: true });
    await t.init(work(t).repo, work(t).home);
  }
  // Each step's input is read into the page cache before the step (a tree all tools read, once):
  // no tool reads it colder than another for going first.
  const each = async (step: Step, input: (t: Tool) => string, fn: (t: Tool) => Promise<Measure>): Promise<void> => {
    const warmed = new Set<string>();
    for (const t of order) {
      if (!warmed.has(input(t))) warmTree(input(t));
      warmed.add(input(t));
      const load = loadavg()[0]!;
      const m = await fn(t);
      out.get(t.name)![step] = { ...m, load };
      console.log(`  ${n} files, round ${r + 1}, ${t.name} ${step}: ${m.seconds.toFixed(2)} s, CPU ${m.cpuSeconds.toFixed(2)} s, ${m.rssMb.toFixed(0)} MB (load ${load.toFixed(1)})`);
    }
  };
  await each('backup', () => data, async (t) => {
    const m = await t.backup(work(t).repo, data, work(t).home);
    snapshots.set(t.name, m.snapshot);
    return m;
  });
  if (STEPS.includes('unchanged')) await each('unchanged', () => data, (t) => t.backup(work(t).repo, data, work(t).home));
  if (STEPS.includes('changed')) {
    const change = await changeOnePercent(data, n);
    try {
      await each('changed', () => data, (t) => t.backup(work(t).repo, data, work(t).home));
    } finally {
      await change.undo();
    }
  }
  if (STEPS.includes('restore')) await each('restore', (t) => work(t).repo, (t) => t.restore(work(t).repo, snapshots.get(t.name)!, targets.next(`${t.name}-${n}`), work(t).home));
  for (const t of order) {
    out.get(t.name)!.repoMb = (await dirBytes(work(t).repo)) / 1e6;
    await rm(dir(t), { recursive: true, force: true });
  }
  return out as Map<string, Sample>;
}

/** Backs the tree up through the real service, then times GET /files pages. */
async function listing(n: number, data: string, pages: number): Promise<{ serviceBackup: number; p50: number; p99: number; max: number }> {
  const dataDir = join(base, 'service');
  await rm(dataDir, { recursive: true, force: true });
  const s = await startService(root, { dataDir, roots: [data] });
  try {
    const { id, seconds: serviceBackup } = await runJob(s, 'backup', { source: data, destination: 'local' });
    const rand = prng(7);
    const tops = Math.ceil(n / PER_DIR / PER_DIR);
    const times: number[] = [];
    const timed = async (query: string): Promise<Record<string, unknown>> => {
      const t0 = performance.now();
      const body = await s.call(`/files?${query}`, { headers: s.auth });
      times.push(performance.now() - t0);
      return body.data;
    };
    for (let i = 0; i < pages / 2; i++) {
      const prefix = `t${String(Math.floor(rand() * tops)).padStart(4, '0')}/`;
      const first = await timed(`backup_id=${id}&prefix=${encodeURIComponent(prefix)}&limit=100`);
      const cursor = first.next_cursor as string | null;
      if (cursor) await timed(`backup_id=${id}&prefix=${encodeURIComponent(prefix)}&limit=100&cursor=${cursor}`);
    }
    const sorted = times.sort((a, b) => a - b);
    const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
    return { serviceBackup, p50: at(0.5), p99: at(0.99), max: sorted.at(-1)! };
  } finally {
    await s.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const wanted = values.tools.split(',').map((t) => t.trim());
  if (wanted.some((t) => !t.startsWith('ours'))) ensureInstalled();
  const all: Record<string, Tool> = { ours: ours(root), restic: restic(), borg: borg() };
  const tools = wanted.map((name) => {
    const at = /^ours@(.+)$/.exec(name);
    const t = at ? { ...ours(resolve(at[1]!)), name } : all[name];
    if (!t) throw new Error(`unknown tool ${name}`);
    return t;
  });
  const rows: string[] = [];
  const results: Record<string, unknown> = {};
  const targets = await RestoreTargets.open(join(base, 'targets'));
  for (const n of sizes) {
    const data = join(base, 'data', `tree-${n}`);
    console.log(`generating ${n} files in ${data} (kept for later runs)`);
    await generateScaleTree(data, n);
    const samples = new Map<string, Sample[]>(tools.map((t) => [t.name, []]));
    for (let r = 0; r < runs; r++) for (const [name, s] of await round(tools, n, data, r, targets)) samples.get(name)!.push(s);
    const med = (name: string, f: (s: Sample) => number): number => median(samples.get(name)!.map(f));
    const ref = tools.some((t) => t.name === 'restic') ? 'restic' : null;
    for (const step of STEPS) {
      const cells = tools.map((t) => {
        const secs = med(t.name, (s) => s[step].seconds);
        const cpu = med(t.name, (s) => s[step].cpuSeconds);
        const rss = med(t.name, (s) => s[step].rssMb);
        const range = (f: (s: Sample) => number): string => {
          const xs = samples.get(t.name)!.map(f);
          return xs.length > 1 ? ` [${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}]` : '';
        };
        const ratio = (v: number, f: (s: Sample) => number): string => (ref && t.name !== ref ? ` (${(v / med(ref, f)).toFixed(2)}×)` : '');
        return `${secs.toFixed(2)} s${range((s) => s[step].seconds)}${ratio(secs, (s) => s[step].seconds)}, ${((secs / n) * 1e6).toFixed(0)} µs/file, CPU ${cpu.toFixed(2)} s${range((s) => s[step].cpuSeconds)}${ratio(cpu, (s) => s[step].cpuSeconds)}, ${rss.toFixed(0)} MB${range((s) => s[step].rssMb)}`;
      });
      const loads = tools.flatMap((t) => samples.get(t.name)!.map((s) => s[step].load));
      rows.push(`| ${n.toLocaleString('en')} | ${step} (load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}) | ${cells.join(' | ')} |`);
    }
    rows.push(`| ${n.toLocaleString('en')} | repository | ${tools.map((t) => `${med(t.name, (s) => s.repoMb).toFixed(0)} MB`).join(' | ')} |`);
    results[n] = Object.fromEntries([...samples].map(([name, s]) => [name, s]));
    if (tools.some((t) => t.name === 'ours') && Number(values.pages) > 0) {
      const l = await listing(n, data, Number(values.pages));
      console.log(`  ${n} files, service: backup ${l.serviceBackup.toFixed(2)} s, listing p50 ${l.p50.toFixed(1)} ms, p99 ${l.p99.toFixed(1)} ms`);
      rows.push(`| ${n.toLocaleString('en')} | listing page (service) | p50 ${l.p50.toFixed(1)} ms, p99 ${l.p99.toFixed(1)} ms, max ${l.max.toFixed(1)} ms (backup through the service ${l.serviceBackup.toFixed(1)} s) |${tools.length > 1 ? ' |'.repeat(tools.length - 1) : ''}`);
      (results[n] as Record<string, unknown>).listing = l;
    }
  }
  await targets.removeAll();
  const machine = [
    `${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${version('uname', ['-r'])}`,
    `node ${process.version}${have('restic') ? `; ${version('restic', ['version'])}` : ''}${have('borg') ? `; ${version('borg', ['--version'])}` : ''}`,
    `median [min–max] of ${runs} round(s), each step run by every tool back to back; wall time (ratio to restic), time per file, CPU time (ratio), peak RSS`,
  ];
  const table = [`| files | step | ${tools.map((t) => t.name).join(' | ')} |`, `|---|---|${tools.map(() => '---').join('|')}|`, ...rows].join('\n');
  const report = `${machine.join('\n')}\n\n${table}\n`;
  console.log(`\n${report}`);
  await mkdir(base, { recursive: true });
  await writeFile(join(base, 'results.md'), report);
  await writeFile(join(base, 'results.json'), JSON.stringify({ machine, runs, results }, null, 2));
}

await main();

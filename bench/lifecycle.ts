/**
 * Lifecycle benchmark: prune and check, ours against restic and borg on the same data, same run.
 *   npm run bench:lifecycle -- [--runs 1] [--size-mib 1024] [--tools ours,restic,borg] [--dir .bench]
 * Data: a tree of --size-mib MiB in 4 MiB files (incompressible), backed up 20 times, 5 % of
 * the files rewritten before each backup. Then every tool forgets the 10 oldest snapshots and
 * reclaims their space (ours: forget + prune; restic: forget --keep-last 10 --prune; borg:
 * prune --keep-last 10 + compact), and checks with every data byte read (ours: check with
 * read_data; restic: check --read-data; borg: check --verify-data). Then ours runs a prune
 * and a backup at the same moment (both must succeed), and restic the same (its backup is
 * refused while the prune holds its exclusive lock). Wall time and peak RSS of every process
 * come from GNU time; each figure is the median over the runs.
 */
import { cpus, totalmem } from 'node:os';
import { mkdir, open, readdir, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { NODE_FLAGS, borg, dirBytes, ensureInstalled, have, measure, median, ours, restic, version } from './tools.ts';
import type { Measure, Tool } from './tools.ts';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '1' },
    'size-mib': { type: 'string', default: '1024' },
    tools: { type: 'string', default: 'ours,restic,borg' },
    dir: { type: 'string', default: join(root, '.bench') },
  },
});
const runs = Number(values.runs);
const sizeMiB = Number(values['size-mib']);
const base = resolve(values.dir);
const FILE_MIB = 4;
const SNAPSHOTS = 20;
const KEEP = 10;
const PASSWORD = 'bench-password-not-secret';

/** Writes file `i` of the tree with the content of generation `gen` (counter-mode SHA-256: incompressible, reproducible). */
async function writeFileGen(dir: string, i: number, gen: number): Promise<void> {
  const block = Buffer.alloc(FILE_MIB * 1024 * 1024);
  for (let o = 0; o < block.length; o += 32) createHash('sha256').update(`${i}-${gen}-${o}`).digest().copy(block, o);
  const fh = await open(join(dir, `f${String(i).padStart(5, '0')}.bin`), 'w');
  await fh.write(block, 0, block.length, 0);
  await fh.close();
}

/** Brings the tree to the state of backup `round` (0-based): every file at its generation then. */
async function treeAt(dir: string, round: number, files: number): Promise<void> {
  if (round === 0) {
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    for (let i = 0; i < files; i++) await writeFileGen(dir, i, 0);
    return;
  }
  // 5 % of the files, a different slice each round.
  const step = Math.max(1, Math.round(files * 0.05));
  for (let k = 0; k < step; k++) await writeFileGen(dir, ((round - 1) * step + k) % files, round);
}

interface Result {
  prune: number;
  pruneRss: number;
  check: number;
  checkRss: number;
  repoBefore: number;
  repoAfter: number;
  backupDuringPrune: number; // 1 when a backup started during the prune succeeded
}

const pruneOps: Record<string, (repo: string, home: string) => Promise<Measure>> = {
  ours: (repo, home) => measure(process.execPath, [...NODE_FLAGS, join(root, 'bench', 'lifecycle-cli.ts'), 'forget-prune', repo, String(KEEP)], { scratch: home }),
  restic: (repo, home) => measure('restic', ['-r', repo, 'forget', '--keep-last', String(KEEP), '--prune'], { env: resticEnv(home), scratch: home }),
  borg: async (repo, home) => {
    const a = await measure('borg', ['prune', '--keep-last', String(KEEP), repo], { env: borgEnv(home), scratch: home });
    const b = await measure('borg', ['compact', repo], { env: borgEnv(home), scratch: home });
    return { seconds: a.seconds + b.seconds, cpuSeconds: a.cpuSeconds + b.cpuSeconds, rssMb: Math.max(a.rssMb, b.rssMb), stdout: '' };
  },
};
const checkOps: Record<string, (repo: string, home: string) => Promise<Measure>> = {
  ours: (repo, home) => measure(process.execPath, [...NODE_FLAGS, join(root, 'bench', 'lifecycle-cli.ts'), 'check', repo], { scratch: home }),
  restic: (repo, home) => measure('restic', ['-r', repo, 'check', '--read-data'], { env: resticEnv(home), scratch: home }),
  borg: (repo, home) => measure('borg', ['check', '--verify-data', repo], { env: borgEnv(home), scratch: home }),
};
function resticEnv(home: string): NodeJS.ProcessEnv {
  return { RESTIC_PASSWORD: PASSWORD, RESTIC_CACHE_DIR: join(home, 'cache') };
}
function borgEnv(home: string): NodeJS.ProcessEnv {
  return { BORG_PASSPHRASE: PASSWORD, BORG_BASE_DIR: home, BORG_RELOCATED_REPO_ACCESS_IS_OK: 'yes' };
}

/** Starts a prune and, once it holds its lock, a backup of `source`; tells whether the backup succeeded. */
async function backupDuringPrune(tool: Tool, repo: string, source: string, home: string): Promise<boolean> {
  let done = false;
  const pruning = pruneOps[tool.name]!(repo, home)
    .catch(() => null)
    .finally(() => (done = true));
  while (!done && (await readdir(join(repo, 'locks')).catch(() => [])).length === 0) await new Promise((r) => setTimeout(r, 20));
  const ok = await tool.backup(repo, source, home).then(
    () => true,
    () => false,
  );
  await pruning;
  return ok;
}

async function runRound(tools: Tool[], round: number): Promise<Map<string, Result>> {
  const files = Math.max(2, Math.round(sizeMiB / FILE_MIB));
  const data = join(base, 'lifecycle', 'data');
  const st = new Map<string, { repo: string; home: string; r: Result }>();
  for (const tool of tools) {
    const work = join(base, 'lifecycle', tool.name);
    await rm(work, { recursive: true, force: true });
    await mkdir(join(work, 'home'), { recursive: true });
    st.set(tool.name, { repo: join(work, 'repo'), home: join(work, 'home'), r: { prune: 0, pruneRss: 0, check: 0, checkRss: 0, repoBefore: 0, repoAfter: 0, backupDuringPrune: 0 } });
    await tool.init(st.get(tool.name)!.repo, st.get(tool.name)!.home);
  }
  for (let s = 0; s < SNAPSHOTS; s++) {
    await treeAt(data, s, files);
    for (const tool of tools) await tool.backup(st.get(tool.name)!.repo, data, st.get(tool.name)!.home);
    process.stdout.write(`\rround ${round + 1}: backup ${s + 1}/${SNAPSHOTS}`);
  }
  console.log();
  const order = tools.map((_, i) => tools[(i + round) % tools.length]!);
  for (const tool of order) {
    const { repo, home, r } = st.get(tool.name)!;
    r.repoBefore = (await dirBytes(repo)) / 1e6;
    const p = await pruneOps[tool.name]!(repo, home);
    r.prune = p.seconds;
    r.pruneRss = p.rssMb;
    r.repoAfter = (await dirBytes(repo)) / 1e6;
  }
  for (const tool of order) {
    const { repo, home, r } = st.get(tool.name)!;
    const c = await checkOps[tool.name]!(repo, home);
    r.check = c.seconds;
    r.checkRss = c.rssMb;
  }
  // Backups during a prune: one more generation of the data, then prune and backup at once.
  await treeAt(data, SNAPSHOTS, files);
  for (const tool of order) {
    if (tool.name === 'borg') continue; // borg holds one exclusive lock for everything
    const { repo, home, r } = st.get(tool.name)!;
    r.backupDuringPrune = (await backupDuringPrune(tool, repo, data, home)) ? 1 : 0;
  }
  const out = new Map<string, Result>();
  for (const tool of tools) {
    const r = st.get(tool.name)!.r;
    console.log(`round ${round + 1} ${tool.name}: ${Object.entries(r).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ')}`);
    out.set(tool.name, r);
  }
  return out;
}

const LABELS: Record<keyof Result, string> = {
  prune: 'forget 10 of 20 + prune, s',
  pruneRss: 'prune peak RSS, MB',
  check: 'check, all data read, s',
  checkRss: 'check peak RSS, MB',
  repoBefore: 'repository before prune, MB',
  repoAfter: 'repository after prune, MB',
  backupDuringPrune: 'backup during prune succeeds (1 yes, 0 no)',
};

async function main(): Promise<void> {
  ensureInstalled();
  const all: Record<string, Tool> = { ours: ours(root), restic: restic(), borg: borg() };
  const tools = values.tools.split(',').map((n) => {
    const t = all[n.trim()];
    if (!t) throw new Error(`unknown tool ${n}`);
    return t;
  });
  const samples = new Map<string, Result[]>(tools.map((t) => [t.name, []]));
  for (let round = 0; round < runs; round++) {
    const results = await runRound(tools, round);
    for (const tool of tools) samples.get(tool.name)!.push(results.get(tool.name)!);
  }
  const keys = Object.keys(LABELS) as (keyof Result)[];
  const medians = new Map([...samples].map(([name, rs]) => [name, Object.fromEntries(keys.map((k) => [k, median(rs.map((r) => r[k]))])) as unknown as Result]));
  const ref = medians.get('restic');
  const names = tools.map((t) => t.name);
  const rows = keys.map((k) => {
    const cells = names.map((n) => {
      const v = medians.get(n)![k];
      if (k === 'backupDuringPrune') return n === 'borg' ? 'n/a' : v ? 'yes' : 'no';
      const digits = k.endsWith('Rss') || k.startsWith('repo') ? 0 : 2;
      return ref && ref[k] ? `${v.toFixed(digits)} (${(v / ref[k]).toFixed(2)}×)` : v.toFixed(digits);
    });
    return `| ${LABELS[k]} | ${cells.join(' | ')} |`;
  });
  const machine = [
    `${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${version('uname', ['-r'])}`,
    `node ${process.version}; ${have('restic') ? version('restic', ['version']) : ''}; ${have('borg') ? version('borg', ['--version']) : ''}`,
    `${sizeMiB} MiB tree, ${SNAPSHOTS} snapshots, 5 % rewritten each; median of ${runs} run(s); ratios to restic (lower is better)`,
  ];
  const table = [`| metric | ${names.join(' | ')} |`, `|---|${names.map(() => '---').join('|')}|`, ...rows].join('\n');
  const report = `${machine.join('\n')}\n\n${table}\n`;
  console.log(`\n${report}`);
  await writeFile(join(base, 'lifecycle-results.md'), report);
  await writeFile(join(base, 'lifecycle-results.json'), JSON.stringify({ machine, runs, samples: Object.fromEntries(samples) }, null, 2));
}

await main();

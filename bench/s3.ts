/**
 * Object-storage benchmark: backup and restore into one throwaway Ceph RADOS Gateway, ours
 * against `restic -r s3:http://127.0.0.1:PORT/bucket`, side by side in one run.
 *   npm run bench:s3 -- [--runs 3] [--sets r] [--tools ours,restic] [--dir .bench]
 * Data sets as in bench:engine: (r) a real tree, a copy of this project's node_modules (symlinks
 * dropped) plus 256 MiB incompressible (the default); (a) ~20,000 source-like files (~250 MB).
 * `--tools ours,ours@../other-checkout,restic` adds another checkout's engine, for with/without.
 * Every tool talks to the gateway through one counting proxy (requests by method, bytes up and
 * down). Wall time is measured here, peak RSS and CPU time by GNU time; each figure is the median
 * over the runs [min–max], every step taken by all tools back to back, the order rotating.
 * Restored trees are kept until the end of the run (bench/fs-state.ts says why).
 */
import { cpus, totalmem } from 'node:os';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startRgw } from '../server/testing/services/rgw.ts';
import { startS3Proxy, type S3Proxy } from '../server/testing/services/s3-proxy.ts';
import { generateRealTree, generateSmall } from './data.ts';
import { RestoreTargets } from './fs-state.ts';
import { ensureInstalled, median, ours, restic, version, type Measure, type Tool } from './tools.ts';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    sets: { type: 'string', default: 'r' },
    tools: { type: 'string', default: 'ours,restic' },
    dir: { type: 'string', default: join(root, '.bench') },
  },
});
const runs = Number(values.runs);
const base = resolve(values.dir);

interface DataSet {
  name: 'a' | 'r';
  dir: string;
  generate: (dir: string) => Promise<void>;
}

type Sample = Record<string, number>;

/** The rows of the table, in order, for the data sets chosen. */
function labels(sets: DataSet[]): [string, string][] {
  const rows: [string, string][] = [];
  for (const { name: d } of sets) {
    rows.push(
      [`backup_${d}`, `backup (${d}), s`],
      [`restore_${d}`, `restore (${d}), s`],
      [`backup_requests_${d}`, `S3 calls, backup (${d})`],
      [`restore_requests_${d}`, `S3 calls, restore (${d})`],
      [`uploaded_mb_${d}`, `bytes uploaded (${d}), MB`],
      [`downloaded_mb_${d}`, `bytes downloaded by restore (${d}), MB`],
      [`cpu_backup_${d}`, `CPU time of backup (${d}), s`],
      [`cpu_restore_${d}`, `CPU time of restore (${d}), s`],
      [`rss_backup_${d}`, `peak RSS of backup (${d}), MB`],
      [`rss_restore_${d}`, `peak RSS of restore (${d}), MB`],
    );
  }
  return rows;
}

async function step(proxy: S3Proxy, run: () => Promise<Measure>): Promise<Measure & { requests: number; byKind: Record<string, number>; up: number; down: number }> {
  proxy.reset();
  const m = await run();
  return { ...m, requests: proxy.counts.requests, byKind: { ...proxy.counts.byKind }, up: proxy.counts.bytesUp, down: proxy.counts.bytesDown };
}

/** Requests by method and object kind, kept in the samples (s3-results.json) as `requests <step>: <method> <kind>`. */
function kinds(stepName: string, byKind: Record<string, number>): Sample {
  return Object.fromEntries(Object.entries(byKind).map(([kind, n]) => [`requests ${stepName}: ${kind}`, n]));
}

async function main(): Promise<void> {
  ensureInstalled();
  const all: DataSet[] = [
    { name: 'a', dir: join(base, 'data', 'a'), generate: generateSmall },
    { name: 'r', dir: join(base, 'data', 'r'), generate: (dir) => generateRealTree(dir, join(root, 'node_modules')) },
  ];
  const sets = values.sets.split(',').map((n) => {
    const d = all.find((s) => s.name === n.trim());
    if (!d) throw new Error(`unknown data set ${n} (a, r)`);
    return d;
  });
  console.log('generating data (kept in', join(base, 'data'), 'for later runs)');
  for (const d of sets) await d.generate(d.dir);
  const tools = values.tools.split(',').map((n) => {
    const [name, checkout] = n.trim().split('@');
    if (name === 'ours') return checkout ? { ...ours(resolve(checkout)), name: n.trim() } : ours(root);
    if (name === 'restic') return restic();
    throw new Error(`unknown tool ${n} (ours, ours@<checkout>, restic)`);
  });

  const targets = await RestoreTargets.open(join(base, 'work-s3-targets'));
  const rgw = await startRgw();
  const proxy = await startS3Proxy(rgw.endpoint);
  // Both tools read the SDK's variables; ours also takes the bucket as the service does.
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: rgw.accessKeyId, AWS_SECRET_ACCESS_KEY: rgw.secretAccessKey, AWS_REGION: rgw.region, AWS_ENDPOINT_URL_S3: proxy.endpoint });
  const samples = new Map<string, Sample[]>(tools.map((t) => [t.name, []]));
  let buckets = 0;
  try {
    for (let round = 0; round < runs; round++) {
      const order = tools.map((_, i) => tools[(i + round) % tools.length]!);
      const r = new Map<string, Sample>(tools.map((t) => [t.name, {}]));
      for (const d of sets) {
        const state = new Map<string, { home: string; repo: string; target: string; snapshot: string; keyFile: string }>();
        for (const [i, tool] of order.entries()) {
          const work = join(base, 'work-s3', `tool${i}`);
          await rm(work, { recursive: true, force: true });
          await mkdir(join(work, 'home'), { recursive: true });
          const bucket = `bench-${++buckets}`;
          await rgw.createBucket(bucket);
          const repo = tool.name === 'restic' ? `s3:${proxy.endpoint}/${bucket}` : `s3://${bucket}/repository`;
          state.set(tool.name, { home: join(work, 'home'), repo, target: targets.next(`${tool.name}-${d.name}-${round}`), snapshot: '', keyFile: join(work, 'repository.key') });
        }
        for (const tool of order) {
          const st = state.get(tool.name)!;
          process.env.BENCH_KEY_FILE = st.keyFile; // engine-cli keeps the key there
          await tool.init(st.repo, st.home);
          const m = await step(proxy, () => tool.backup(st.repo, d.dir, st.home));
          st.snapshot = (m as Measure & { snapshot?: string }).snapshot ?? 'latest';
          Object.assign(r.get(tool.name)!, {
            [`backup_${d.name}`]: m.seconds,
            [`backup_requests_${d.name}`]: m.requests,
            [`uploaded_mb_${d.name}`]: m.up / 1e6,
            [`cpu_backup_${d.name}`]: m.cpuSeconds,
            [`rss_backup_${d.name}`]: m.rssMb,
            ...kinds(`backup_${d.name}`, m.byKind),
          });
          console.log(`round ${round + 1} (${d.name}) ${tool.name} backup: ${m.seconds.toFixed(1)} s, CPU ${m.cpuSeconds.toFixed(1)} s, ${JSON.stringify(m.byKind)}`);
        }
        for (const tool of order) {
          const st = state.get(tool.name)!;
          process.env.BENCH_KEY_FILE = st.keyFile;
          const m = await step(proxy, () => tool.restore(st.repo, st.snapshot, st.target, st.home));
          Object.assign(r.get(tool.name)!, {
            [`restore_${d.name}`]: m.seconds,
            [`restore_requests_${d.name}`]: m.requests,
            [`downloaded_mb_${d.name}`]: m.down / 1e6,
            [`cpu_restore_${d.name}`]: m.cpuSeconds,
            [`rss_restore_${d.name}`]: m.rssMb,
            ...kinds(`restore_${d.name}`, m.byKind),
          });
          console.log(`round ${round + 1} (${d.name}) ${tool.name} restore: ${m.seconds.toFixed(1)} s, CPU ${m.cpuSeconds.toFixed(1)} s, ${JSON.stringify(m.byKind)}`);
        }
      }
      for (const tool of tools) samples.get(tool.name)!.push(r.get(tool.name)!);
    }
  } finally {
    await rm(join(base, 'work-s3'), { recursive: true, force: true });
    await targets.removeAll();
    await proxy.close();
    await rgw.cleanup();
  }

  const stat = (name: string, m: string) => {
    const xs = samples.get(name)!.map((s) => s[m]!);
    return { min: Math.min(...xs), median: median(xs), max: Math.max(...xs) };
  };
  const names = tools.map((t) => t.name);
  const ref = names.includes('restic') ? 'restic' : undefined;
  const lines = labels(sets).map(([m, label]) => {
    const digits = /^(backup|restore)_[ar]$|^cpu/.test(m) ? 2 : 0;
    const cells = names.map((n) => {
      const s = stat(n, m);
      const ratio = ref ? ` (${(s.median / stat(ref, m).median).toFixed(2)}×)` : '';
      const range = runs > 1 && digits > 0 ? ` [${s.min.toFixed(digits)}–${s.max.toFixed(digits)}]` : '';
      return `${s.median.toFixed(digits)}${ratio}${range}`;
    });
    return `| ${label} | ${cells.join(' | ')} |`;
  });
  const machine = [
    `${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${version('uname', ['-r'])}`,
    `node ${process.version}; ${version('restic', ['version'])}; ${version('radosgw', ['--version'])}, one-node cluster on loopback, every tool through one counting proxy`,
    `median of ${runs} run(s) [min–max], each step run by every tool back to back; in parentheses the ratio of the medians to restic's (lower is better)`,
  ];
  const table = [`| metric | ${names.join(' | ')} |`, `|---|${names.map(() => '---').join('|')}|`, ...lines].join('\n');
  const report = `${machine.join('\n')}\n\n${table}\n`;
  console.log(`\n${report}`);
  await writeFile(join(base, 's3-results.md'), report);
  await writeFile(join(base, 's3-results.json'), JSON.stringify({ machine, runs, samples: Object.fromEntries(samples) }, null, 2));
}

await main();

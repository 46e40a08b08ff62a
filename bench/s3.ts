/**
 * Object-storage benchmark: backup and restore of the engine benchmark's real-tree data set (a)
 * (~20,000 source-like files, ~250 MB) into one throwaway Ceph RADOS Gateway, ours against
 * `restic -r s3:http://127.0.0.1:PORT/bucket`, side by side in one run.
 *   npm run bench:s3 -- [--runs 3] [--dir .bench]
 * Both tools talk to the gateway through one counting proxy (requests by method, bytes up and
 * down). Wall time is measured here, peak RSS and CPU time by GNU time; each figure is the
 * median over the runs, every step taken by both tools back to back, the order rotating.
 */
import { cpus, totalmem } from 'node:os';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startRgw } from '../server/testing/services/rgw.ts';
import { startS3Proxy, type S3Proxy } from '../server/testing/services/s3-proxy.ts';
import { generateSmall } from './data.ts';
import { ensureInstalled, median, ours, restic, version, type Measure, type Tool } from './tools.ts';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    dir: { type: 'string', default: join(root, '.bench') },
  },
});
const runs = Number(values.runs);
const base = resolve(values.dir);

type Metric = 'backup_s' | 'restore_s' | 'backup_requests' | 'restore_requests' | 'uploaded_mb' | 'downloaded_mb' | 'rss_mb' | 'cpu_backup_s';
const LABELS: Record<Metric, string> = {
  backup_s: 'backup (a), s',
  restore_s: 'restore (a), s',
  backup_requests: 'requests, backup',
  restore_requests: 'requests, restore',
  uploaded_mb: 'bytes uploaded, MB',
  downloaded_mb: 'bytes downloaded by restore, MB',
  rss_mb: 'peak RSS, MB',
  cpu_backup_s: 'CPU time of backup, s',
};

async function step(proxy: S3Proxy, run: () => Promise<Measure>): Promise<Measure & { requests: number; byMethod: Record<string, number>; up: number; down: number }> {
  proxy.reset();
  const m = await run();
  return { ...m, requests: proxy.counts.requests, byMethod: { ...proxy.counts.byMethod }, up: proxy.counts.bytesUp, down: proxy.counts.bytesDown };
}

async function main(): Promise<void> {
  ensureInstalled();
  const data = join(base, 'data', 'a');
  console.log('generating data (kept in', join(base, 'data'), 'for later runs)');
  await generateSmall(data);

  const rgw = await startRgw();
  const proxy = await startS3Proxy(rgw.endpoint);
  // Both tools read the SDK's variables; ours also takes the bucket as the service does.
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: rgw.accessKeyId, AWS_SECRET_ACCESS_KEY: rgw.secretAccessKey, AWS_REGION: rgw.region, AWS_ENDPOINT_URL_S3: proxy.endpoint });
  const tools: Tool[] = [ours(root), restic()];
  const samples = new Map<string, Record<Metric, number>[]>(tools.map((t) => [t.name, []]));
  try {
    for (let round = 0; round < runs; round++) {
      const order = tools.map((_, i) => tools[(i + round) % tools.length]!);
      const state = new Map<string, { home: string; repo: string; target: string; snapshot: string; r: Record<Metric, number> }>();
      for (const tool of order) {
        const work = join(base, 'work-s3', tool.name);
        await rm(work, { recursive: true, force: true });
        await mkdir(join(work, 'home'), { recursive: true });
        const bucket = `${tool.name}-${round}`;
        await rgw.createBucket(bucket);
        const repo = tool.name === 'restic' ? `s3:${proxy.endpoint}/${bucket}` : `s3://${bucket}/repository`;
        if (tool.name === 'ours') process.env.BENCH_KEY_FILE = join(work, 'repository.key'); // engine-cli keeps the key there
        state.set(tool.name, { home: join(work, 'home'), repo, target: join(work, 'target'), snapshot: '', r: {} as Record<Metric, number> });
      }
      for (const tool of order) {
        const st = state.get(tool.name)!;
        await tool.init(st.repo, st.home);
        const m = await step(proxy, () => tool.backup(st.repo, data, st.home));
        st.snapshot = (m as Measure & { snapshot?: string }).snapshot ?? 'latest';
        Object.assign(st.r, { backup_s: m.seconds, backup_requests: m.requests, uploaded_mb: m.up / 1e6, rss_mb: m.rssMb, cpu_backup_s: m.cpuSeconds });
        console.log(`round ${round + 1} ${tool.name} backup: ${m.seconds.toFixed(1)} s, ${JSON.stringify(m.byMethod)}`);
      }
      for (const tool of order) {
        const st = state.get(tool.name)!;
        const m = await step(proxy, () => tool.restore(st.repo, st.snapshot, st.target, st.home));
        Object.assign(st.r, { restore_s: m.seconds, restore_requests: m.requests, downloaded_mb: m.down / 1e6, rss_mb: Math.max(st.r.rss_mb, m.rssMb) });
        console.log(`round ${round + 1} ${tool.name} restore: ${m.seconds.toFixed(1)} s, ${JSON.stringify(m.byMethod)}`);
        await rm(join(base, 'work-s3', tool.name), { recursive: true, force: true });
      }
      for (const tool of tools) samples.get(tool.name)!.push(state.get(tool.name)!.r);
    }
  } finally {
    await proxy.close();
    await rgw.cleanup();
  }

  const medians = new Map([...samples].map(([name, rs]) => [name, Object.fromEntries((Object.keys(LABELS) as Metric[]).map((m) => [m, median(rs.map((r) => r[m]))])) as Record<Metric, number>]));
  const ref = medians.get('restic')!;
  const rows = (Object.keys(LABELS) as Metric[]).map((m) => {
    const digits = m.endsWith('_s') ? 2 : 0;
    const cells = tools.map((t) => {
      const v = medians.get(t.name)![m];
      return `${v.toFixed(digits)} (${(v / ref[m]).toFixed(2)}×)`;
    });
    return `| ${LABELS[m]} | ${cells.join(' | ')} |`;
  });
  const machine = [
    `${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${version('uname', ['-r'])}`,
    `node ${process.version}; ${version('restic', ['version'])}; ${version('radosgw', ['--version'])}, one-node cluster on loopback, both tools through one counting proxy`,
    `median of ${runs} run(s), each step run by both tools back to back; figures in parentheses are ratios to restic (lower is better)`,
  ];
  const table = [`| metric | ${tools.map((t) => t.name).join(' | ')} |`, `|---|${tools.map(() => '---').join('|')}|`, ...rows].join('\n');
  const report = `${machine.join('\n')}\n\n${table}\n`;
  console.log(`\n${report}`);
  await writeFile(join(base, 's3-results.md'), report);
  await writeFile(join(base, 's3-results.json'), JSON.stringify({ machine, runs, samples: Object.fromEntries(samples) }, null, 2));
}

await main();

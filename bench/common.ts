/** What the benchmarks share: statistics, the machine line, and writing their section of docs/performance.md. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, totalmem } from 'node:os';

/** What an autocannon run reports (the parts the benchmarks read). */
export interface LoadResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
export const autocannon = createRequire(import.meta.url)('autocannon') as (opts: object) => Promise<LoadResult>;

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/** The value below which `p` percent of the values lie (nearest rank). */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** User + system CPU time of process `pid` so far, in microseconds (Linux /proc; USER_HZ is 100). */
export function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

export function machine(): string {
  return `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

/** Replaces the section under `heading` (up to the next "## " heading) of `file`, or appends it. */
export function writeSection(file: string, heading: string, section: string): void {
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '# Performance\n';
  const lines = current.split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  let next: string;
  if (start === -1) {
    next = `${current.trimEnd()}\n\n${section.trimEnd()}\n`;
  } else {
    let end = lines.findIndex((l, i) => i > start && /^## /.test(l));
    if (end === -1) end = lines.length;
    next = [...lines.slice(0, start), ...section.trimEnd().split('\n'), '', ...lines.slice(end)].join('\n').trimEnd() + '\n';
  }
  writeFileSync(file, next);
}

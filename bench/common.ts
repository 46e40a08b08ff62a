/** What the benchmarks share: statistics, the machine line, and writing their section of docs/performance.md. */
import { execFileSync } from 'node:child_process';
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

/**
 * Cores of their own for a load generator (the benchmark's process) and the service it measures:
 * the first half of the cores this process may use (/proc/self/status) and the rest, as taskset's
 * lists; null when they share every core (one core, or BENCH_SHARED_CORES=1). Sharing them, the
 * load takes the service's core in bursts, and what is measured is the load as much as the service.
 */
export const CORES = ((): { load: string; service: string } | null => {
  const allowed = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]!.split(',').flatMap((range) => {
    const [from, to = from] = range.split('-').map(Number);
    return Array.from({ length: to! - from! + 1 }, (_, i) => from! + i);
  });
  if (allowed.length < 2 || process.env.BENCH_SHARED_CORES === '1') return null;
  const half = Math.floor(allowed.length / 2);
  return { load: allowed.slice(0, half).join(','), service: allowed.slice(half).join(',') };
})();

/** Puts every thread of this process on the load's cores (taskset -a); threads it starts later inherit them. */
export function pinLoad(): void {
  if (CORES) execFileSync('taskset', ['-a', '-p', '-c', CORES.load, String(process.pid)], { stdio: 'ignore' });
}

/** The command line that runs `command` on the service's cores (taskset execs it: same pid). */
export function onServiceCores(command: string[]): string[] {
  return CORES ? ['taskset', '-c', CORES.service, ...command] : command;
}

/** Where the service and `load` (what the benchmark's process runs) ran, for the page. */
export function coresLine(load: string): string {
  return CORES ? `The service ran on core(s) ${CORES.service}, ${load} on core(s) ${CORES.load} (taskset).` : `${load[0]!.toUpperCase()}${load.slice(1)} shared every core with the service.`;
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

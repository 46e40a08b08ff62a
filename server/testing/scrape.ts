/** Test helpers for the Prometheus exposition: fetch and parse a scrape, and run promtool on it. */
import { spawnSync } from 'node:child_process';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a text exposition (comments skipped). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, raw] of (m[2] ?? '').matchAll(LABEL)) labels[name!] = raw!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `labels`; undefined when there is none. */
export function sampleSum(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const matching = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return matching.length === 0 ? undefined : matching.reduce((sum, s) => sum + s.value, 0);
}

export async function scrape(url: string): Promise<{ text: string; samples: Sample[]; contentType: string | null }> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`scrape ${url}: ${res.status}`);
  const text = await res.text();
  return { text, samples: parseExposition(text), contentType: res.headers.get('content-type') };
}

/** `promtool check metrics` findings, one per line ("<metric> <problem>"); needs Debian's prometheus package. */
export function promtoolCheckMetrics(exposition: string): string[] {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  if (run.error) throw run.error;
  if (run.status !== 0 && run.status !== 3) throw new Error(`promtool check metrics failed (${run.status}): ${run.stderr}`);
  return `${run.stdout}${run.stderr}`.split('\n').filter((l) => l.trim() !== '');
}

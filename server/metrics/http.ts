import type { FinishedRequest } from '../http/logger.ts';
import type { OperationIndex } from '../http/operation-of.ts';
import type { Counter, Histogram } from 'prom-client';
import type { MetricSet } from './definitions.ts';

/** Status classes by first digit (a status has three digits). */
const CLASSES = 10;

/** prom-client's stored value of one label set of a histogram (15.x: `hashMap` of these, buckets not cumulative). */
interface HistogramEntry {
  labels: Record<string, string>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}
type HistogramStore = { hashMap: Record<string, HistogramEntry> };
type Collected = { collect?: () => void };

/**
 * Counts and times every request when its answer is finished, by operation (numbered once at
 * start, server/http/operation-of.ts) and status class. This runs on every request, so it only
 * adds to plain arrays: the labelled counter and histogram are filled from them when a scrape
 * collects them (prom-client checks and hashes the labels on every call made through its API,
 * which cost more than the rest of the request's bookkeeping together). It is called from the
 * request log's 'finish' listener with the duration that log measured.
 */
export function httpMetrics(metrics: MetricSet, operations: Pick<OperationIndex, 'ids' | 'indexOf'>): FinishedRequest {
  const { ids, indexOf } = operations;
  const cells = ids.length * CLASSES;
  const bounds = Float64Array.from((metrics.httpDuration as unknown as { upperBounds: number[] }).upperBounds);
  const counts = new Float64Array(cells);
  const sums = new Float64Array(cells);
  const buckets = new Float64Array(cells * bounds.length); // per bucket, not cumulative
  const seen: number[] = []; // cells in the order of their first request, the order prom-client lists them in
  const labels: Array<Record<string, string>> = [];
  const labelsOf = (cell: number) => (labels[cell] ??= { operation: ids[Math.floor(cell / CLASSES)]!, status_class: `${cell % CLASSES}xx` });

  // The counter is handed what it has not been handed yet, through its own API.
  const counted = new Float64Array(cells);
  const requests = metrics.httpRequests as Counter & Collected;
  requests.collect = () => {
    for (const cell of seen) {
      const added = counts[cell]! - counted[cell]!;
      if (added === 0) continue;
      requests.inc(labelsOf(cell), added);
      counted[cell] = counts[cell]!;
    }
  };
  // The histogram has no API to add bucket counts: its entries are set whole, under the key its
  // own zero() gives the label set (so remove() and reset() keep working on them).
  const duration = metrics.httpDuration as Histogram & HistogramStore & Collected;
  const keys: string[] = [];
  const keyOf = (cell: number): string => {
    const cached = keys[cell];
    if (cached !== undefined && duration.hashMap[cached]?.labels === labelsOf(cell)) return cached;
    duration.zero(labelsOf(cell));
    const key = Object.keys(duration.hashMap).find((k) => duration.hashMap[k]!.labels === labelsOf(cell))!;
    return (keys[cell] = key);
  };
  duration.collect = () => {
    for (const cell of seen) {
      const bucketValues: Record<number, number> = {};
      for (let b = 0; b < bounds.length; b++) bucketValues[bounds[b]!] = buckets[cell * bounds.length + b]!;
      duration.hashMap[keyOf(cell)] = { labels: labelsOf(cell), bucketValues, sum: sums[cell]!, count: counts[cell]! };
    }
  };

  return (req, res, seconds) => {
    const digit = Math.floor(res.statusCode / 100);
    const cell = indexOf(req) * CLASSES + (digit >= 0 && digit < CLASSES ? digit : 0);
    if (counts[cell]!++ === 0) seen.push(cell);
    sums[cell]! += seconds;
    let b = 0;
    while (b < bounds.length && seconds > bounds[b]!) b++;
    if (b < bounds.length) buckets[cell * bounds.length + b]!++;
  };
}

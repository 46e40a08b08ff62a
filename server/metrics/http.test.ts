import type { Request, Response } from 'express';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { UNMATCHED } from '../http/operation-of.ts';
import { defineMetrics } from './definitions.ts';
import { httpMetrics } from './http.ts';

const ids = ['getBackup', 'createBackup', UNMATCHED];
/** Durations on, between, below and above the bucket bounds. */
const DURATIONS = [0, 0.001, 0.005, 0.0051, 0.01, 0.3, 1, 2.5, 29.9, 30, 31, 120];
const STATUSES = [200, 201, 204, 304, 400, 401, 404, 429, 500, 503];

function requests(): Array<{ operation: number; status: number; seconds: number }> {
  const all = [];
  let i = 0;
  for (const seconds of DURATIONS) for (const status of STATUSES) all.push({ operation: i++ % ids.length, status, seconds });
  return all;
}

describe('HTTP request metrics', () => {
  it('expose exactly what prom-client exposes when every request is observed through its own API, across scrapes', async () => {
    const ours = new Registry();
    const finished = httpMetrics(defineMetrics(ours), { ids, indexOf: (req) => (req as unknown as { op: number }).op });
    const reference = new Registry();
    const direct = defineMetrics(reference);
    const all = requests();
    const half = all.length / 2;
    const serve = (from: number, to: number) => {
      for (const r of all.slice(from, to)) {
        finished({ op: r.operation } as unknown as Request, { statusCode: r.status } as Response, r.seconds);
        const labels = { operation: ids[r.operation]!, status_class: `${Math.floor(r.status / 100)}xx` };
        direct.httpRequests.inc(labels);
        direct.httpDuration.observe(labels, r.seconds);
      }
    };
    expect(await ours.metrics()).toBe(await reference.metrics()); // nothing served: both empty
    serve(0, half);
    const first = await ours.metrics();
    expect(first).toBe(await reference.metrics());
    expect(first).toContain('backup_http_request_duration_seconds_bucket{le="0.005",operation="getBackup",status_class="2xx"}');
    serve(half, all.length);
    expect(await ours.metrics()).toBe(await reference.metrics());
    expect(await ours.metrics()).toBe(await reference.metrics()); // a scrape with nothing new changes nothing
  });
});

import type { Request } from 'express';
import type { FinishedRequest } from '../http/logger.ts';
import type { Counter, Histogram } from 'prom-client';
import type { MetricSet } from './definitions.ts';

type Children = { count: Counter.Internal; duration: Histogram.Internal<'operation' | 'status_class'> };

/**
 * Counts and times every request when its answer is finished, by operation (server/http/
 * operation-of.ts) and status class. This runs on every request, so it does the least it can:
 * it is called from the request log's 'finish' listener with the duration that log measured,
 * and looks the label children up by operation and status digit, made once each (there are at
 * most (operations + 1) × status classes of them).
 */
export function httpMetrics(metrics: MetricSet, operationOf: (req: Request) => string): FinishedRequest {
  const children = new Map<string, Array<Children | undefined>>();
  const childrenOf = (operation: string, status: number): Children => {
    let byClass = children.get(operation);
    if (!byClass) children.set(operation, (byClass = []));
    const digit = Math.floor(status / 100);
    let c = byClass[digit];
    if (!c) {
      const labels = { operation, status_class: `${digit}xx` };
      c = byClass[digit] = { count: metrics.httpRequests.labels(labels), duration: metrics.httpDuration.labels(labels) };
    }
    return c;
  };
  return (req, res, seconds) => {
    const c = childrenOf(operationOf(req), res.statusCode);
    c.count.inc();
    c.duration.observe(seconds);
  };
}

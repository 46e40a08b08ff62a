import { isIP } from 'node:net';
import { ConfigError, parseInt10 } from '../config-values.ts';

/** Where /metrics is served: its own listener, never the API port. */
export interface MetricsSettings {
  /** METRICS_PORT, default 9464 (the OpenTelemetry Prometheus exporter's port); null when METRICS_PORT=0 (off). */
  port: number | null;
  /** METRICS_HOST, default 127.0.0.1: a scrape from another host needs the operator to say so. */
  host: string;
}

export const DEFAULT_METRICS_PORT = 9464;

export function loadMetricsSettings(env: NodeJS.ProcessEnv): MetricsSettings {
  const port = parseInt10('METRICS_PORT', env.METRICS_PORT, DEFAULT_METRICS_PORT, 0, 65535);
  const host = env.METRICS_HOST?.trim() || '127.0.0.1';
  if (!isIP(host) && host !== 'localhost') {
    throw new ConfigError(`METRICS_HOST must be an IP address to listen on (e.g. 127.0.0.1, 0.0.0.0, ::), got "${env.METRICS_HOST}"`);
  }
  return { port: port === 0 ? null : port, host };
}

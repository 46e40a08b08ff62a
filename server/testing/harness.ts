import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createApp, type AppOptions, type BackupServiceApp } from '../app.ts';
import { createApiKey, type CreatedKey } from '../auth/api-keys.ts';
import { loadConfig, type Plan } from '../config.ts';
import { shapeEnv } from './shape.ts';

/** A real service on an ephemeral loopback port, with its own data dir and allowed root in a temp dir. */
export interface Harness {
  base: string;
  dir: string;
  root: string;
  dataDir: string;
  /** The settings the service was started with (for a keys command or a second instance on the same store). */
  env: Record<string, string>;
  service: BackupServiceApp;
  server: Server;
  request(path: string, init?: RequestInit & { token?: string; json?: unknown }): Promise<{ status: number; headers: Headers; body: any }>;
  newKey(plan?: Plan): Promise<CreatedKey>;
  tokenFor(key: CreatedKey): Promise<string>;
  /** Stops the service (as SIGTERM would); the temp dir stays until cleanup(). */
  stop(): Promise<void>;
  cleanup(): Promise<void>;
}

export async function startHarness(env: Record<string, string> = {}, options: AppOptions = {}, existingDir?: string): Promise<Harness> {
  const dir = existingDir ?? realpathSync(mkdtempSync(join(tmpdir(), 'service-')));
  const root = join(dir, 'root');
  const dataDir = join(dir, 'data');
  mkdirSync(root, { recursive: true });
  // The master key lives outside DATA_DIR, as it must; in the test's temp dir, not the user's home.
  // Audit lines go to a file of the test's own (not the test runner's stdout); metrics are collected, served only on request.
  const settings = {
    DATA_DIR: dataDir,
    BACKUP_ALLOWED_ROOTS: root,
    PORT: '0',
    HOST: '127.0.0.1',
    MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
    AUDIT_LOG: join(dir, 'audit.log'),
    ...(await shapeEnv()),
    ...env,
  };
  const config = loadConfig(settings);
  const service = await createApp(config, { logger: pino({ level: 'silent' }), ...options });
  const server = await service.listen();
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  // With TLS_CERT_FILE in env the server speaks HTTPS: request() (fetch) cannot trust a test CA,
  // so such tests talk to `base` with testing/https-client.ts.
  const base = `${config.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  let stopped = false;
  const h: Harness = {
    base,
    dir,
    root,
    dataDir,
    env: settings,
    service,
    server,
    async request(path, init = {}) {
      const { token, json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (token) headers.set('authorization', `Bearer ${token}`);
      if (json !== undefined) headers.set('content-type', 'application/json');
      const res = await fetch(base + path, { ...rest, headers, ...(json !== undefined ? { body: JSON.stringify(json) } : {}) });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON: leave the text for the assertion to show
      }
      return { status: res.status, headers: res.headers, body };
    },
    newKey(plan = 'business') {
      return createApiKey(service.services.store, { plan });
    },
    async tokenFor(key) {
      const res = await h.request('/api/v1/auth/token', { method: 'POST', json: { api_key: key.apiKey, secret: key.secret } });
      if (res.status !== 200) throw new Error(`token: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.data.access_token as string;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await service.close();
    },
    async cleanup() {
      await h.stop();
      if (!existingDir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return h;
}

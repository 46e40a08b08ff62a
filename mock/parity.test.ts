// The parity run: the same scripted requests to the mock and to a real server (createApp on
// loopback, a real data directory and file tree), both at once, answer by answer. It fails on
// any difference docs/mock.md does not list with its reason, and on any listed one that no
// longer occurs.
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mockApis } from '../generated/mock-operations.ts';
import { createApp, type BackupServiceApp } from '../server/app.ts';
import { loadConfig } from '../server/config.ts';
import { differences, documentedDifferences, type Answer } from './parity/compare.ts';
import { parityScript, type Step, type Vars } from './parity/script.ts';
import { startMock, type RunningMock } from './start.ts';

const KEY = { apiKey: 'key_parity', secret: 'parity-secret-0123456789', plan: 'free_trial' };

interface Side {
  name: 'server' | 'mock';
  backup: string;
  tools: string;
  vars: Vars;
}

let dir: string;
let root: string;
let service: BackupServiceApp;
let mock: RunningMock;
let sides: [Side, Side];

/** The source tree: the entries of the spec's file-list example, so both sides list the same paths. */
async function writeSource(source: string): Promise<void> {
  const example = Object.values(mockApis.backup.operations.listFiles!.responses['200']!.examples)[0] as { data: { items: { path: string; type: string; size_bytes: number; link_target: string | null }[] } };
  for (const entry of example.data.items) {
    const path = join(source, entry.path);
    await mkdir(entry.type === 'directory' ? path : dirname(path), { recursive: true });
    if (entry.type === 'file') await writeFile(path, Buffer.alloc(entry.size_bytes, entry.path));
    if (entry.type === 'symlink') await symlink(entry.link_target!, path);
  }
}

beforeAll(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'parity-')));
  root = join(dir, 'root');
  await writeSource(join(root, 'source'));
  const config = loadConfig({
    DATA_DIR: join(dir, 'data'),
    BACKUP_ALLOWED_ROOTS: root,
    PORT: '0',
    HOST: '127.0.0.1',
    BACKUP_BOOTSTRAP_API_KEY: KEY.apiKey,
    BACKUP_BOOTSTRAP_SECRET: KEY.secret,
    BACKUP_BOOTSTRAP_PLAN: KEY.plan,
    BACKUP_REPOSITORY_PASSWORD: 'parity-repository-password',
  });
  service = await createApp(config, { logger: pino({ level: 'silent' }) });
  const server = await service.listen(0, '127.0.0.1');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  mock = await startMock({ backupPort: 0, toolsPort: 0, jobSeconds: 0.3, credentials: [KEY], allowedRoots: [root] });
  sides = [
    { name: 'server', backup: `${origin}/api/v1`, tools: origin, vars: { side: 'server' } },
    { name: 'mock', backup: mock.backupUrl, tools: mock.toolsUrl, vars: { side: 'mock' } },
  ];
}, 60_000);

afterAll(async () => {
  await mock?.close();
  await service?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function send(side: Side, step: Step): Promise<Answer> {
  const headers: Record<string, string> = { 'X-Request-Id': `parity-${step.id}`, ...step.headers };
  const auth = step.auth ?? step.api === 'backup';
  if (auth !== false && (typeof auth === 'string' || side.vars.token)) headers.Authorization = `Bearer ${typeof auth === 'string' ? auth : side.vars.token}`;
  const raw = typeof step.body === 'function' ? (step.body as (v: Vars) => unknown)(side.vars) : step.body;
  if (raw !== undefined) headers['Content-Type'] = step.contentType ?? 'application/json';
  const body = raw === undefined ? undefined : typeof raw === 'string' ? raw : JSON.stringify(raw);
  const url = (step.api === 'backup' ? side.backup : side.tools) + (typeof step.path === 'function' ? step.path(side.vars) : step.path);
  for (;;) {
    const response = await fetch(url, { method: step.method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: compared as text
    }
    const status = (parsed as { data?: { status?: string } }).data?.status;
    if (step.untilFinished && (status === 'queued' || status === 'running')) {
      await sleep(100);
      continue;
    }
    return { status: response.status, headers: response.headers, body: parsed };
  }
}

describe('parity of the mock with the server', () => {
  it('answers every scripted request as the server does, or differs only as docs/mock.md says and why', async () => {
    const steps = parityScript({ root, apiKey: KEY.apiKey, secret: KEY.secret, site: 'http://127.0.0.1:9/' });
    const found = new Map<string, string[]>();
    for (const step of steps) {
      // Both halves of a pair are counted in the same rate-limit window.
      const toMinute = 60_000 - (Date.now() % 60_000);
      if (toMinute < 300) await sleep(toMinute + 50);
      const [server, mocked] = await Promise.all(sides.map((side) => send(side, step)));
      for (const [i, answer] of [server!, mocked!].entries()) step.capture?.(answer.body as { data?: Record<string, unknown> }, sides[i]!.vars);
      const diff = differences(server!, mocked!);
      if (diff.length > 0) found.set(step.id, diff);
    }
    const documented = documentedDifferences(await readFile(new URL('../docs/mock.md', import.meta.url), 'utf8'));
    const undocumented = [...found].filter(([id]) => !documented.has(id)).map(([id, diff]) => `${id}:\n    ${diff.join('\n    ')}`);
    const stale = [...documented.keys()].filter((id) => !found.has(id));
    console.log(`parity: ${steps.length} requests compared, ${found.size} differ, ${found.size - undocumented.length} of them documented in docs/mock.md`);
    expect(undocumented, 'differences docs/mock.md does not list').toEqual([]);
    expect(stale, 'rows of docs/mock.md whose difference no longer occurs').toEqual([]);
    expect(mock.violations).toEqual([]);
  });
});

import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKeysCli } from '../keys-cli.ts';
import { readKeyFile } from '../keys/key-file.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { startListeningServer } from '../testing/processes.ts';

const BOOTSTRAP = { apiKey: 'key_audit_bootstrap', secret: 'audit-bootstrap-secret-0123456789' };
/** Text that is in a backed-up file and must never reach the audit log. */
const FILE_CONTENT = 'CONTENT-MARKER-4f1c9a: the quarterly numbers';

/** A key as it could appear in text. */
const encodings = (key: Buffer): string[] => [key.toString('base64url'), key.toString('base64'), key.toString('hex')];

type Line = Record<string, unknown> & { log_type: string; time: string; event: string; account_id: string | null; request_id: string | null };

describe('the audit log over a session of traffic', () => {
  let h: Harness;
  let log: string;
  let lines: Line[];
  const used: string[] = [BOOTSTRAP.secret];
  const requestIds: Record<string, string> = {};
  let cliKey: { apiKey: string; accountId: string };

  beforeAll(async () => {
    h = await startHarness({ BACKUP_BOOTSTRAP_API_KEY: BOOTSTRAP.apiKey, BACKUP_BOOTSTRAP_SECRET: BOOTSTRAP.secret, BACKUP_BOOTSTRAP_PLAN: 'business' });
    const env = h.env;
    const out: string[] = [];
    expect(await runKeysCli(['create', '--plan', 'pro'], env, (l) => out.push(l))).toBe(0);
    const field = (name: string) => out.find((l) => l.startsWith(`${name}:`))!.split(/\s+/)[1]!;
    cliKey = { apiKey: field('api_key'), accountId: field('account') };
    const cliSecret = field('secret');
    used.push(cliSecret);

    const token = async (apiKey: string, secret: string, id: string) => {
      const res = await h.request('/api/v1/auth/token', { method: 'POST', json: { api_key: apiKey, secret }, headers: { 'X-Request-Id': id } });
      requestIds[id] = res.headers.get('x-request-id')!;
      return res;
    };
    const bootstrapToken = (await token(BOOTSTRAP.apiKey, BOOTSTRAP.secret, 'token-1')).body.data.access_token as string;
    const cliToken = (await token(cliKey.apiKey, cliSecret, 'token-2')).body.data.access_token as string;
    used.push(bootstrapToken, cliToken);
    expect((await token(BOOTSTRAP.apiKey, 'the-wrong-secret-for-this-key', 'bad-secret')).status).toBe(401);
    expect((await h.request('/api/v1/backup', { token: `${bootstrapToken}x`, headers: { 'X-Request-Id': 'bad-token' } })).status).toBe(401);

    const source = join(h.root, 'documents');
    mkdirSync(source);
    writeFileSync(join(source, 'report.txt'), `${FILE_CONTENT}\n`);
    const backup = await h.request('/api/v1/backup', { method: 'POST', token: bootstrapToken, json: { source }, headers: { Prefer: 'wait=25', 'X-Request-Id': 'backup-1' } });
    expect(backup.body.data.status).toBe('completed');
    const restore = await h.request('/api/v1/restore', {
      method: 'POST',
      token: bootstrapToken,
      json: { backup_id: backup.body.data.id, target_path: join(h.root, 'restored') },
      headers: { Prefer: 'wait=25', 'X-Request-Id': 'restore-1' },
    });
    expect(restore.body.data.status).toBe('completed');

    // A backup cancelled while it runs (16 MiB of random data keep it busy long enough).
    const big = join(h.root, 'big');
    mkdirSync(big);
    writeFileSync(join(big, 'random.bin'), randomBytes(16 * 1024 * 1024));
    const running = await h.request('/api/v1/backup', { method: 'POST', token: cliToken, json: { source: big }, headers: { 'X-Request-Id': 'backup-2' } });
    const cancelled = await h.request(`/api/v1/backup/${running.body.data.id}/cancel`, { method: 'POST', token: cliToken, headers: { 'X-Request-Id': 'cancel-1' } });
    expect(cancelled.status).toBe(202);
    for (let i = 0; i < 200 && (await h.request(`/api/v1/backup/${running.body.data.id}`, { token: cliToken })).body.data.status !== 'cancelled'; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }

    expect(await runKeysCli(['revoke', cliKey.apiKey], env, () => {})).toBe(0);
    // The keys the server keeps must not leak either, in any encoding.
    const keyFiles = [...readdirSync(join(h.dataDir, 'secrets')).map((name) => join(h.dataDir, 'secrets', name)), h.env.MASTER_KEY_FILE!];
    for (const file of keyFiles) used.push(...encodings(readKeyFile(file)));

    log = readFileSync(join(h.dir, 'audit.log'), 'utf8');
    lines = log.trimEnd().split('\n').map((l) => JSON.parse(l) as Line);
  });
  afterAll(() => h.cleanup());

  const find = (event: string, where: Record<string, unknown> = {}) =>
    lines.filter((l) => l.event === event && Object.entries(where).every(([k, v]) => l[k] === v));

  it('writes one JSON line per event, each with its type, time, account and request id', () => {
    for (const l of lines) {
      expect(l.log_type).toBe('audit');
      expect(new Date(l.time).toISOString()).toBe(l.time);
      expect(l).toHaveProperty('account_id');
      expect(l).toHaveProperty('request_id');
    }
    expect(statSync(join(h.dir, 'audit.log')).mode & 0o777).toBe(0o600);
  });

  it('records key creation (start-up bootstrap, keys command) and revocation', () => {
    expect(find('key.created', { key_id: BOOTSTRAP.apiKey, via: 'bootstrap', plan: 'business' })).toHaveLength(1);
    expect(find('key.created', { key_id: cliKey.apiKey, account_id: cliKey.accountId, via: 'cli', plan: 'pro' })).toHaveLength(1);
    expect(find('key.revoked', { key_id: cliKey.apiKey, account_id: cliKey.accountId, via: 'cli' })).toHaveLength(1);
  });

  it('records tokens issued and authentication failures with the client address', () => {
    expect(find('auth.token_issued', { request_id: 'token-1', key_id: BOOTSTRAP.apiKey, client_ip: '127.0.0.1' })).toHaveLength(1);
    expect(find('auth.token_issued', { request_id: 'token-2', account_id: cliKey.accountId })).toHaveLength(1);
    expect(find('auth.failed', { request_id: 'bad-secret', reason: 'INVALID_CREDENTIALS', operation: 'createToken', client_ip: '127.0.0.1' })).toHaveLength(1);
    expect(find('auth.failed', { request_id: 'bad-token', reason: 'UNAUTHORIZED', operation: 'listBackups', account_id: null })).toHaveLength(1);
  });

  it('records backups and restores requested, started and finished, and a cancellation', () => {
    const requested = find('backup.requested', { request_id: 'backup-1' });
    expect(requested).toHaveLength(1);
    const job = requested[0]!.job_id as string;
    expect(requested[0]).toMatchObject({ source: join(h.root, 'documents'), destination: 'cloud', client_ip: '127.0.0.1' });
    expect(find('backup.started', { job_id: job, request_id: null })).toHaveLength(1);
    expect(find('backup.finished', { job_id: job, status: 'completed', error_code: null })[0]).toMatchObject({ files_backed_up: 1, size_bytes: FILE_CONTENT.length + 1 });

    const restore = find('restore.requested', { request_id: 'restore-1', backup_id: job, target_path: join(h.root, 'restored') });
    expect(restore).toHaveLength(1);
    expect(find('restore.started', { job_id: restore[0]!.job_id })).toHaveLength(1);
    expect(find('restore.finished', { job_id: restore[0]!.job_id, status: 'completed' })).toHaveLength(1);

    const second = find('backup.requested', { request_id: 'backup-2' })[0]!.job_id;
    expect(find('backup.cancel_requested', { request_id: 'cancel-1', job_id: second, account_id: cliKey.accountId })).toHaveLength(1);
    expect(find('backup.finished', { job_id: second }).map((l) => l.status)).toEqual(['cancelled']);
  });

  it('never holds a secret, a token or file content', () => {
    expect(used.length).toBeGreaterThanOrEqual(10);
    for (const secret of used) expect(log).not.toContain(secret);
    expect(log).not.toContain('CONTENT-MARKER');
    expect(log).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/); // no JWT of any kind
  });
});

describe('audit log of npm start', () => {
  let dir: string;
  beforeAll(async () => {
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    dir = mkdtempSync(join(tmpdir(), 'audit-main-'));
  });
  afterAll(async () => (await import('node:fs')).rmSync(dir, { recursive: true, force: true }));

  it('goes to stdout with log_type "audit" when AUDIT_LOG is unset, without the development secret', async () => {
    const p = await startListeningServer({ DATA_DIR: join(dir, 'data'), MASTER_KEY_FILE: join(dir, 'keys', 'master.key'), BACKUP_ALLOWED_ROOTS: dir, METRICS_PORT: '0', AUDIT_LOG: '' });
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    const secret = /secret:\s+(\S+)/.exec(p.output())![1]!;
    const audit = p.output().split('\n').filter((l) => l.includes('"log_type":"audit"'));
    expect(audit.map((l) => JSON.parse(l).event)).toEqual(['key.created']);
    expect(JSON.parse(audit[0]!)).toMatchObject({ via: 'development', plan: 'free_trial', request_id: null });
    expect(audit.join('\n')).not.toContain(secret);
  });

  it('records settings refused at start, naming the setting and blanking secret values', async () => {
    const file = join(dir, 'refused', 'audit.log');
    const tooShort = 'short-s3cret';
    const failed = await startListeningServer({
      DATA_DIR: join(dir, 'data2'),
      MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
      AUDIT_LOG: file,
      BACKUP_BOOTSTRAP_API_KEY: 'key_x',
      BACKUP_BOOTSTRAP_SECRET: tooShort,
    }).catch((err: Error) => err.message);
    expect(failed).toContain('Configuration error: BACKUP_BOOTSTRAP_SECRET');
    const [line] = readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(line).toMatchObject({ log_type: 'audit', event: 'settings.refused', setting: 'BACKUP_BOOTSTRAP_SECRET', account_id: null, request_id: null });
    expect(JSON.stringify(line)).not.toContain(tooShort);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'refused')).mode & 0o777).toBe(0o700);
  });

  it('records a master key rotation, and a master key other than the deployment one as a refused setting, never a key', async () => {
    // The data directory of the stdout test above was set up with dir/keys/master.key (its server has stopped).
    const file = join(dir, 'mismatch', 'audit.log');
    const before = readKeyFile(join(dir, 'keys', 'master.key'));
    const env = { DATA_DIR: join(dir, 'data'), MASTER_KEY_FILE: join(dir, 'keys', 'master.key'), AUDIT_LOG: file };
    expect(await runKeysCli(['rotate-master'], env, () => {})).toBe(0);
    const [rotated] = readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(rotated).toMatchObject({ log_type: 'audit', event: 'master_key.rotated', via: 'cli', account_id: null, request_id: null });
    expect(rotated.repository_keys).toEqual(expect.any(Number));
    for (const text of [...encodings(before), ...encodings(readKeyFile(join(dir, 'keys', 'master.key')))]) expect(JSON.stringify(rotated)).not.toContain(text);

    const other = join(dir, 'other-keys', 'master.key');
    const failed = await startListeningServer({ DATA_DIR: join(dir, 'data'), MASTER_KEY_FILE: other, BACKUP_ALLOWED_ROOTS: dir, AUDIT_LOG: file }).catch(
      (err: Error) => err.message,
    );
    expect(failed).toContain('exited 78');
    const line = readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l)).at(-1);
    expect(line).toMatchObject({ event: 'settings.refused', setting: 'MASTER_KEY_FILE', account_id: null });
    for (const key of [join(dir, 'keys', 'master.key'), other]) for (const text of encodings(readKeyFile(key))) expect(JSON.stringify(line)).not.toContain(text);
  });
});

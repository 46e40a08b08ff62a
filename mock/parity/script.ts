/**
 * The parity run's script: the requests a frontend sends, happy paths and refusals, in an order
 * both sides can follow (ids, tokens and cursors are taken from each side's own answers). Steps
 * whose answers are known to differ for a reason of the real disk or network come last, so what
 * they change on one side only cannot affect another step.
 */
import { join } from 'node:path';

export type Vars = Record<string, string>;

export interface Step {
  id: string;
  api: 'backup' | 'tools';
  method: string;
  /** Path below the API's base URL. */
  path: string | ((v: Vars) => string);
  body?: unknown | ((v: Vars) => unknown);
  /** Content-Type of the body (default application/json; a string body is sent as is). */
  contentType?: string;
  headers?: Record<string, string>;
  /** Send the side's bearer token (default: for Backup API steps other than the public ones). */
  auth?: boolean | string;
  /** Read the answer again until the job it names has ended, and compare the last answer. */
  untilFinished?: boolean;
  /** Takes values out of the answer for later steps. */
  capture?: (body: { data?: Record<string, unknown> }, v: Vars) => void;
}

export interface ScriptEnv {
  /** The allowed root on the server; the mock is told the same. */
  root: string;
  apiKey: string;
  secret: string;
  /** A loopback website for check-site. */
  site: string;
}

const MISSING_BACKUP = 'bkp_01JZZZZZZZZZZZZZZZZZZZZZZZ';
const MISSING_RESTORE = 'rst_01JZZZZZZZZZZZZZZZZZZZZZZZ';

export function parityScript(env: ScriptEnv): Step[] {
  const source = join(env.root, 'source');
  const id = (name: string) => (b: { data?: Record<string, unknown> }, v: Vars) => void (v[name] = String(b.data?.id));
  const contact = { name: 'Ann', email: 'ann@example.com', subject: 'Restore', message: 'How do I restore one file?' };
  const steps: Step[] = [
    { id: 'status', api: 'backup', method: 'GET', path: '/status', auth: false },
    { id: 'token-wrong-secret', api: 'backup', method: 'POST', path: '/auth/token', body: { api_key: env.apiKey, secret: 'not-the-secret-0123456789' } },
    { id: 'token-missing-secret', api: 'backup', method: 'POST', path: '/auth/token', body: { api_key: env.apiKey } },
    { id: 'token-not-json', api: 'backup', method: 'POST', path: '/auth/token', body: 'api_key=x', contentType: 'text/plain' },
    { id: 'token-broken-json', api: 'backup', method: 'POST', path: '/auth/token', body: '{"api_key": ', contentType: 'application/json' },
    {
      id: 'token',
      api: 'backup',
      method: 'POST',
      path: '/auth/token',
      body: { api_key: env.apiKey, secret: env.secret },
      capture: (b, v) => void (v.token = String(b.data?.access_token)),
    },
    { id: 'list-empty', api: 'backup', method: 'GET', path: '/backup' },
    { id: 'files-before-any-backup', api: 'backup', method: 'GET', path: '/files' },
    { id: 'no-token', api: 'backup', method: 'GET', path: '/backup', auth: false },
    { id: 'bad-token', api: 'backup', method: 'GET', path: '/backup', auth: 'not.a.token' },
    { id: 'create-backup', api: 'backup', method: 'POST', path: '/backup', headers: { Prefer: 'wait=20' }, body: { source }, capture: id('backup') },
    {
      id: 'create-backup-options',
      api: 'backup',
      method: 'POST',
      path: '/backup',
      headers: { Prefer: 'wait=20' },
      body: { source: join(source, 'contracts'), destination: 'local', options: { compression: 'none', encryption: true, deduplication: false } },
      capture: id('backup2'),
    },
    { id: 'follow-backup', api: 'backup', method: 'GET', path: (v) => `/backup/${v.backup}`, untilFinished: true },
    { id: 'list-backups', api: 'backup', method: 'GET', path: '/backup' },
    { id: 'list-page-1', api: 'backup', method: 'GET', path: '/backup?limit=1', capture: (b, v) => void (v.cursor = String(b.data?.next_cursor)) },
    { id: 'list-page-2', api: 'backup', method: 'GET', path: (v) => `/backup?limit=1&cursor=${v.cursor}` },
    { id: 'list-completed', api: 'backup', method: 'GET', path: '/backup?status=completed' },
    { id: 'list-bad-limit', api: 'backup', method: 'GET', path: '/backup?limit=0' },
    { id: 'list-bad-cursor', api: 'backup', method: 'GET', path: '/backup?cursor=not-a-cursor' },
    { id: 'list-unknown-parameter', api: 'backup', method: 'GET', path: '/backup?surprise=1' },
    { id: 'backup-unknown', api: 'backup', method: 'GET', path: `/backup/${MISSING_BACKUP}` },
    { id: 'backup-malformed-id', api: 'backup', method: 'GET', path: '/backup/bkp_malformed' },
    { id: 'create-backup-outside-roots', api: 'backup', method: 'POST', path: '/backup', body: { source: '/etc' } },
    { id: 'create-backup-relative', api: 'backup', method: 'POST', path: '/backup', body: { source: 'relative/path' } },
    { id: 'create-backup-unknown-property', api: 'backup', method: 'POST', path: '/backup', body: { source, surprise: true } },
    { id: 'create-backup-bad-destination', api: 'backup', method: 'POST', path: '/backup', body: { source, destination: 'nowhere' } },
    { id: 'create-backup-too-large', api: 'backup', method: 'POST', path: '/backup', body: { source, padding: 'x'.repeat(70 * 1024) } },
    { id: 'create-backup-no-token', api: 'backup', method: 'POST', path: '/backup', body: { source }, auth: false },
    { id: 'cancel-finished', api: 'backup', method: 'POST', path: (v) => `/backup/${v.backup}/cancel` },
    { id: 'cancel-unknown', api: 'backup', method: 'POST', path: `/backup/${MISSING_BACKUP}/cancel` },
    { id: 'cancel-malformed-id', api: 'backup', method: 'POST', path: '/backup/bkp_malformed/cancel' },
    { id: 'files-newest', api: 'backup', method: 'GET', path: '/files' },
    { id: 'files-of-backup', api: 'backup', method: 'GET', path: (v) => `/files?backup_id=${v.backup}` },
    { id: 'files-prefix', api: 'backup', method: 'GET', path: (v) => `/files?backup_id=${v.backup}&prefix=contracts/` },
    { id: 'files-page-1', api: 'backup', method: 'GET', path: (v) => `/files?backup_id=${v.backup}&limit=2`, capture: (b, v) => void (v.files = String(b.data?.next_cursor)) },
    { id: 'files-page-2', api: 'backup', method: 'GET', path: (v) => `/files?backup_id=${v.backup}&limit=2&cursor=${v.files}` },
    { id: 'files-bad-limit', api: 'backup', method: 'GET', path: '/files?limit=5000' },
    { id: 'files-unknown-backup', api: 'backup', method: 'GET', path: `/files?backup_id=${MISSING_BACKUP}` },
    {
      id: 'restore',
      api: 'backup',
      method: 'POST',
      path: '/restore',
      headers: { Prefer: 'wait=20' },
      body: (v: Vars) => ({ backup_id: v.backup, target_path: join(env.root, 'restored') }),
      capture: id('restore'),
    },
    {
      id: 'restore-subset',
      api: 'backup',
      method: 'POST',
      path: '/restore',
      headers: { Prefer: 'wait=20' },
      body: (v: Vars) => ({ backup_id: v.backup, target_path: join(env.root, 'partial'), paths: ['notes.md'], overwrite: 'always' }),
    },
    { id: 'restore-get', api: 'backup', method: 'GET', path: (v) => `/restore/${v.restore}` },
    { id: 'restore-unknown', api: 'backup', method: 'GET', path: `/restore/${MISSING_RESTORE}` },
    { id: 'restore-malformed-id', api: 'backup', method: 'GET', path: '/restore/rst_malformed' },
    { id: 'restore-outside-roots', api: 'backup', method: 'POST', path: '/restore', body: (v: Vars) => ({ backup_id: v.backup, target_path: '/etc/restored' }) },
    {
      id: 'restore-path-not-in-backup',
      api: 'backup',
      method: 'POST',
      path: '/restore',
      body: (v: Vars) => ({ backup_id: v.backup, target_path: join(env.root, 'nowhere'), paths: ['no/such/file'] }),
    },
    { id: 'restore-unknown-backup', api: 'backup', method: 'POST', path: '/restore', body: { backup_id: MISSING_BACKUP, target_path: join(env.root, 'x') } },
    { id: 'unknown-path', api: 'backup', method: 'GET', path: '/nowhere', auth: false },
    { id: 'method-not-allowed', api: 'backup', method: 'DELETE', path: '/status', auth: false },
    { id: 'subscribe', api: 'tools', method: 'POST', path: '/api/newsletter/subscribe', body: { email: 'Ann@Example.COM', source: 'parity' } },
    { id: 'subscribe-again', api: 'tools', method: 'POST', path: '/api/newsletter/subscribe', body: { email: 'Ann@example.com', source: 'parity-again' } },
    { id: 'subscribe-invalid', api: 'tools', method: 'POST', path: '/api/newsletter/subscribe', body: { email: 'not-an-address', source: 'parity' } },
    { id: 'contact-bad-type', api: 'tools', method: 'POST', path: '/api/contacts/complaints', body: contact },
  ];
  for (let i = 1; i <= 4; i++) steps.push({ id: `contact-${i}`, api: 'tools', method: 'POST', path: '/api/contacts/support', body: contact });
  steps.push(
    { id: 'contact-over-limit', api: 'tools', method: 'POST', path: '/api/contacts/support', body: contact },
    // Last: what only the real disk or network can tell, so the mock's different answers change nothing above.
    { id: 'ip-info', api: 'tools', method: 'GET', path: '/api/tools/ip-info' },
    { id: 'check-site', api: 'tools', method: 'POST', path: '/api/tools/check-site', body: { url: env.site } },
    { id: 'create-backup-missing-source', api: 'backup', method: 'POST', path: '/backup', body: { source: join(env.root, 'missing') } },
    { id: 'restore-onto-a-file', api: 'backup', method: 'POST', path: '/restore', body: (v: Vars) => ({ backup_id: v.backup, target_path: join(source, 'notes.md') }) },
  );
  return steps;
}

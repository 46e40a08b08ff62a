/**
 * The integration flows: every operation, on its happy path and on every error response a client
 * can provoke (400/401/403/404/409/413/415/422, and 429 when `exhaustLimits` is set). Written
 * against API-relative paths, so they run through the Prism proxy or straight at a server.
 *
 * Each group of public-tool calls carries its own X-Forwarded-For address (the server trusts
 * the loopback proxy), so per-address limits only trip where a flow wants a 429.
 */
import { join } from 'node:path';
import { Session } from '../lib/session.ts';
import { CREDENTIALS } from '../lib/stack.ts';

export interface FlowEnv {
  allowedRoot: string;
  source: string;
  bigSource: string;
  siteOrigin: string;
}

// Well-formed ids that were never issued.
export const MISSING_BACKUP = 'bkp_01JZZZZZZZZZZZZZZZZZZZZZZZ';
export const MISSING_RESTORE = 'rst_01JZZZZZZZZZZZZZZZZZZZZZZZ';
export const MISSING_MAINTENANCE = 'mnt_01JZZZZZZZZZZZZZZZZZZZZZZZ';
const HUGE = 'x'.repeat(70 * 1024);
const TEXT = { 'Content-Type': 'text/plain' };

let address = 0;
/** A fresh client address for the server's per-address limits. */
function from(): Record<string, string> {
  address++;
  return { 'X-Forwarded-For': `198.51.100.${address % 250}` };
}

function id(res: { json: unknown }): string {
  const data = Session.data(res as never);
  const value = data?.['id'];
  if (typeof value !== 'string') throw new Error(`no id in ${JSON.stringify(res.json).slice(0, 200)}`);
  return value;
}

export async function backupFlows(s: Session, env: FlowEnv): Promise<{ backupId: string }> {
  // System status and tokens.
  await s.call('backup', 'GET', '/status', { expect: 200 });
  await s.call('backup', 'GET', '/status?verbose=1', { expect: 400 });
  // The health probes at the site origin (tools document).
  await s.call('tools', 'GET', '/livez', { expect: 200 });
  await s.call('tools', 'GET', '/livez?verbose=1', { expect: 400 });
  await s.call('tools', 'GET', '/readyz', { expect: 200 });
  await s.call('tools', 'GET', '/readyz?verbose=1', { expect: 400 });
  const login = from();
  await s.call('backup', 'POST', '/auth/token', { headers: login, body: { api_key: CREDENTIALS.apiKey, secret: 'not-the-secret-000000' }, expect: 401 });
  await s.call('backup', 'POST', '/auth/token', { headers: login, body: { api_key: CREDENTIALS.apiKey }, expect: 400 });
  await s.call('backup', 'POST', '/auth/token', { headers: { ...login, ...TEXT }, body: JSON.stringify({ api_key: CREDENTIALS.apiKey, secret: CREDENTIALS.secret }), expect: 415 });
  await s.call('backup', 'POST', '/auth/token', { headers: login, body: { api_key: CREDENTIALS.apiKey, secret: HUGE }, expect: 413 });
  await s.login(CREDENTIALS.apiKey, CREDENTIALS.secret);

  // Backups: create, wait, read, list, page.
  const created = await s.call('backup', 'POST', '/backup', {
    headers: { Prefer: 'wait=25' },
    body: { source: env.source, destination: 'local', options: { compression: 'zstd', encryption: true, deduplication: true } },
    expect: 202,
  });
  const backupId = id(created);
  const job = await s.waitJob('backup', backupId);
  if (job['status'] !== 'completed') s.failures.push(`backup ${backupId} ended ${String(job['status'])}`);
  const second = await s.call('backup', 'POST', '/backup', { headers: { Prefer: 'wait=25' }, body: { source: join(env.source, 'docs') }, expect: 202 });
  await s.waitJob('backup', id(second));
  await s.call('backup', 'GET', `/backup/${backupId}`, { expect: 200 });
  await s.call('backup', 'GET', '/backup', { expect: 200 });
  await s.call('backup', 'GET', '/backup?status=completed', { expect: 200 });
  const page = await s.call('backup', 'GET', '/backup?limit=1', { expect: 200 });
  const cursor = Session.data(page)?.['next_cursor'];
  if (typeof cursor === 'string') await s.call('backup', 'GET', `/backup?limit=1&cursor=${cursor}`, { expect: 200 });
  else s.failures.push('GET /backup?limit=1 over two backups gave no next_cursor');
  await s.call('backup', 'GET', '/backup?limit=0', { expect: 400 });
  await s.call('backup', 'GET', '/backup?cursor=not-a-cursor', { expect: 400 });
  await s.call('backup', 'GET', '/backup', { anonymous: true, expect: 401 });
  await s.call('backup', 'GET', '/backup', { headers: { Authorization: 'Bearer not.a.token' }, expect: 401 });
  await s.call('backup', 'GET', '/backup/bkp_malformed', { expect: 400 });
  await s.call('backup', 'GET', `/backup/${MISSING_BACKUP}`, { expect: 404 });
  await s.call('backup', 'GET', `/backup/${backupId}`, { anonymous: true, expect: 401 });

  // createBackup errors.
  await s.call('backup', 'POST', '/backup', { body: { source: env.source, surprise: true }, expect: 400 });
  await s.call('backup', 'POST', '/backup', { body: { source: 'relative/path' }, expect: 400 });
  await s.call('backup', 'POST', '/backup', { body: { source: '/etc' }, expect: 403 });
  await s.call('backup', 'POST', '/backup', { body: { source: join(env.allowedRoot, 'does-not-exist') }, expect: 422 });
  await s.call('backup', 'POST', '/backup', { body: { source: env.source, destination: 'nowhere' }, expect: 422 });
  await s.call('backup', 'POST', '/backup', { headers: TEXT, body: JSON.stringify({ source: env.source }), expect: 415 });
  await s.call('backup', 'POST', '/backup', { body: { source: env.source, padding: HUGE }, expect: 413 });
  await s.call('backup', 'POST', '/backup', { anonymous: true, body: { source: env.source }, expect: 401 });

  // Cancel: a running backup, a finished one, unknown and malformed ids.
  const big = await s.call('backup', 'POST', '/backup', { body: { source: env.bigSource }, expect: 202 });
  const bigId = id(big);
  await s.call('backup', 'POST', `/backup/${bigId}/cancel`, { expect: 202 });
  const cancelled = await s.waitJob('backup', bigId);
  if (cancelled['status'] !== 'cancelled') s.failures.push(`cancelled backup ended ${String(cancelled['status'])}`);
  await s.call('backup', 'POST', `/backup/${backupId}/cancel`, { expect: 409 });
  await s.call('backup', 'POST', `/backup/${MISSING_BACKUP}/cancel`, { expect: 404 });
  await s.call('backup', 'POST', '/backup/bkp_malformed/cancel', { expect: 400 });
  await s.call('backup', 'POST', `/backup/${backupId}/cancel`, { anonymous: true, expect: 401 });

  // Files.
  await s.call('backup', 'GET', '/files', { expect: 200 });
  const files = await s.call('backup', 'GET', `/files?backup_id=${backupId}&limit=2`, { expect: 200 });
  const filesCursor = Session.data(files)?.['next_cursor'];
  if (typeof filesCursor === 'string') await s.call('backup', 'GET', `/files?backup_id=${backupId}&limit=2&cursor=${filesCursor}`, { expect: 200 });
  else s.failures.push('GET /files?limit=2 over the fixture tree gave no next_cursor');
  await s.call('backup', 'GET', `/files?backup_id=${backupId}&prefix=${encodeURIComponent('docs/')}`, { expect: 200 });
  await s.call('backup', 'GET', '/files?limit=5000', { expect: 400 });
  await s.call('backup', 'GET', '/files?backup_id=nope', { expect: 400 });
  await s.call('backup', 'GET', `/files?backup_id=${MISSING_BACKUP}`, { expect: 404 });
  await s.call('backup', 'GET', `/files?backup_id=${bigId}`, { expect: 409 });
  await s.call('backup', 'GET', '/files', { anonymous: true, expect: 401 });

  // Restores.
  const target = join(env.allowedRoot, 'restored');
  const restore = await s.call('backup', 'POST', '/restore', { headers: { Prefer: 'wait=25' }, body: { backup_id: backupId, target_path: target }, expect: 202 });
  const restoreId = id(restore);
  const restored = await s.waitJob('restore', restoreId);
  if (restored['status'] !== 'completed') s.failures.push(`restore ${restoreId} ended ${String(restored['status'])}`);
  const partial = await s.call('backup', 'POST', '/restore', { headers: { Prefer: 'wait=25' }, body: { backup_id: backupId, target_path: join(env.allowedRoot, 'partial'), paths: ['docs'], overwrite: 'always' }, expect: 202 });
  await s.waitJob('restore', id(partial));
  await s.call('backup', 'GET', `/restore/${restoreId}`, { expect: 200 });
  await s.call('backup', 'GET', '/restore/rst_malformed', { expect: 400 });
  await s.call('backup', 'GET', `/restore/${MISSING_RESTORE}`, { expect: 404 });
  await s.call('backup', 'GET', `/restore/${restoreId}`, { anonymous: true, expect: 401 });
  const restoreBody = { backup_id: backupId, target_path: join(env.allowedRoot, 'restore-errors') };
  await s.call('backup', 'POST', '/restore', { body: { ...restoreBody, overwrite: 'sometimes' }, expect: 400 });
  await s.call('backup', 'POST', '/restore', { body: { ...restoreBody, target_path: '/etc/contract-tests' }, expect: 403 });
  await s.call('backup', 'POST', '/restore', { body: { ...restoreBody, backup_id: MISSING_BACKUP }, expect: 404 });
  await s.call('backup', 'POST', '/restore', { body: { ...restoreBody, backup_id: bigId }, expect: 409 });
  await s.call('backup', 'POST', '/restore', { body: { ...restoreBody, padding: HUGE }, expect: 413 });
  await s.call('backup', 'POST', '/restore', { headers: TEXT, body: JSON.stringify(restoreBody), expect: 415 });
  await s.call('backup', 'POST', '/restore', { body: { ...restoreBody, target_path: join(env.source, 'hello.txt') }, expect: 422 });
  await s.call('backup', 'POST', '/restore', { body: { ...restoreBody, paths: ['no/such/entry'] }, expect: 422 });
  await s.call('backup', 'POST', '/restore', { anonymous: true, body: restoreBody, expect: 401 });
  return { backupId };
}

/** The repository lifecycle: delete, retention, prune, check, maintenance jobs and usage. */
export async function lifecycleFlows(s: Session, env: FlowEnv): Promise<{ backupId: string }> {
  await s.call('backup', 'GET', '/usage', { expect: 200 });
  await s.call('backup', 'GET', '/usage?verbose=1', { expect: 400 });
  await s.call('backup', 'GET', '/usage', { anonymous: true, expect: 401 });

  // Delete: an unfinished backup is refused, a finished one is forgotten (once).
  const doomed = await s.call('backup', 'POST', '/backup', { headers: { Prefer: 'wait=25' }, body: { source: join(env.source, 'docs') }, expect: 202 });
  const doomedId = id(doomed);
  await s.waitJob('backup', doomedId);
  // A prune of this repository waits for the running backup's lock, so it can be cancelled meanwhile.
  const running = await s.call('backup', 'POST', '/backup', { body: { source: env.bigSource }, expect: 202 });
  const runningId = id(running);
  await s.call('backup', 'DELETE', `/backup/${runningId}`, { expect: 409 });
  const waiting = await s.call('backup', 'POST', '/prune', { body: { destination: 'cloud' }, expect: 202 });
  const waitingId = id(waiting);
  await s.call('backup', 'GET', `/maintenance/${waitingId}`, { expect: 200 });
  await s.call('backup', 'POST', `/maintenance/${waitingId}/cancel`, { expect: 202 });
  await s.waitJob('maintenance', waitingId);
  await s.call('backup', 'POST', `/maintenance/${waitingId}/cancel`, { expect: 409 });
  await s.call('backup', 'POST', `/backup/${runningId}/cancel`, { expect: 202 });
  await s.waitJob('backup', runningId);
  await s.call('backup', 'DELETE', `/backup/${doomedId}`, { expect: 200 });
  await s.call('backup', 'DELETE', `/backup/${doomedId}`, { expect: 404 });
  await s.call('backup', 'DELETE', '/backup/bkp_malformed', { expect: 400 });
  await s.call('backup', 'DELETE', `/backup/${runningId}`, { anonymous: true, expect: 401 });

  // Retention: a preview, then errors.
  await s.call('backup', 'POST', '/retention', { body: { source: env.source, keep_last: 1, dry_run: true }, expect: 200 });
  await s.call('backup', 'POST', '/retention', { body: { keep_last: -1 }, expect: 400 });
  await s.call('backup', 'POST', '/retention', { body: { keep_last: 1, destination: 'nowhere' }, expect: 422 });
  await s.call('backup', 'POST', '/retention', { headers: TEXT, body: JSON.stringify({ keep_last: 1 }), expect: 415 });
  await s.call('backup', 'POST', '/retention', { body: { keep_last: 1, padding: HUGE }, expect: 413 });

  // Prune and check, each to its end; then errors.
  const prune = await s.call('backup', 'POST', '/prune', { headers: { Prefer: 'wait=25' }, body: { destination: 'cloud', dry_run: true }, expect: 202 });
  await s.waitJob('maintenance', id(prune));
  const check = await s.call('backup', 'POST', '/check', { headers: { Prefer: 'wait=25' }, body: { destination: 'cloud', read_data_subset: '10%' }, expect: 202 });
  await s.waitJob('maintenance', id(check));
  await s.call('backup', 'POST', '/prune', { body: { destination: 'nowhere' }, expect: 422 });
  await s.call('backup', 'POST', '/check', { body: { read_data_subset: 'most' }, expect: 400 });
  await s.call('backup', 'POST', '/check', { headers: TEXT, body: '{}', expect: 415 });
  await s.call('backup', 'GET', `/maintenance/${MISSING_MAINTENANCE}`, { expect: 404 });
  await s.call('backup', 'GET', '/maintenance/mnt_malformed', { expect: 400 });
  await s.call('backup', 'POST', `/maintenance/${MISSING_MAINTENANCE}/cancel`, { expect: 404 });
  const kept = await s.call('backup', 'POST', '/backup', { headers: { Prefer: 'wait=25' }, body: { source: join(env.source, 'docs') }, expect: 202 });
  const keptId = id(kept);
  await s.waitJob('backup', keptId);
  return { backupId: keptId };
}

export async function toolsFlows(s: Session, env: FlowEnv): Promise<void> {
  await s.call('tools', 'GET', '/api/tools/ip-info', { headers: from(), expect: 200 });
  await s.call('tools', 'GET', '/api/tools/ip-info?detail=1', { headers: from(), expect: 400 });

  const site = from();
  await s.call('tools', 'POST', '/api/tools/check-site', { headers: site, body: { url: `${env.siteOrigin}/` }, expect: 200 });
  await s.call('tools', 'POST', '/api/tools/check-site', { headers: site, body: { url: `${env.siteOrigin}/down` }, expect: 200 });
  await s.call('tools', 'POST', '/api/tools/check-site', { headers: site, body: { url: `${env.siteOrigin}/redirect` }, expect: 200 });
  await s.call('tools', 'POST', '/api/tools/check-site', { headers: site, body: { url: 'http://169.254.169.254/latest/meta-data/' }, expect: 422 });
  await s.call('tools', 'POST', '/api/tools/check-site', { headers: site, body: { url: 'not a url' }, expect: 400 });
  await s.call('tools', 'POST', '/api/tools/check-site', { headers: { ...site, ...TEXT }, body: JSON.stringify({ url: env.siteOrigin }), expect: 415 });
  await s.call('tools', 'POST', '/api/tools/check-site', { headers: site, body: { url: env.siteOrigin, padding: HUGE }, expect: 413 });

  const email = `flow-${Date.now()}@example.com`;
  await s.call('tools', 'POST', '/api/newsletter/subscribe', { headers: from(), body: { email, source: 'contract-tests' }, expect: 201 });
  await s.call('tools', 'POST', '/api/newsletter/subscribe', { headers: from(), body: { email, source: 'contract-tests' }, expect: 200 });
  await s.call('tools', 'POST', '/api/newsletter/subscribe', { headers: from(), body: { email: 'not-an-email', source: 'x' }, expect: 400 });
  await s.call('tools', 'POST', '/api/newsletter/subscribe', { headers: { ...from(), ...TEXT }, body: JSON.stringify({ email, source: 'x' }), expect: 415 });
  await s.call('tools', 'POST', '/api/newsletter/subscribe', { headers: from(), body: { email, source: HUGE }, expect: 413 });

  const message = { name: 'Contract Tests', email: 'ct@example.com', subject: 'Hello', message: 'A message from the contract tests.' };
  for (const type of ['general', 'sales', 'support', 'feedback', 'report-issue']) {
    await s.call('tools', 'POST', `/api/contacts/${type}`, { headers: from(), body: message, expect: 201 });
  }
  await s.call('tools', 'POST', '/api/contacts/complaints', { headers: from(), body: message, expect: 400 });
  await s.call('tools', 'POST', '/api/contacts/general', { headers: from(), body: { ...message, message: undefined }, expect: 400 });
  await s.call('tools', 'POST', '/api/contacts/general', { headers: { ...from(), ...TEXT }, body: JSON.stringify(message), expect: 415 });
  await s.call('tools', 'POST', '/api/contacts/general', { headers: from(), body: { ...message, message: HUGE }, expect: 413 });
}

/** Calls until the limit answers 429 (at most `max` calls); returns whether it did. */
async function exhaust(s: Session, max: number, call: () => Promise<{ status: number }>): Promise<boolean> {
  for (let i = 0; i < max; i++) {
    const res = await call();
    if (res.status === 429) return true;
  }
  return false;
}

/** 429s: per-address limits of the token endpoint and each tool, and the account's plan limit. */
export async function limitFlows(s: Session, env: FlowEnv): Promise<void> {
  const cases: Array<[string, number, () => Promise<{ status: number }>]> = [];
  const token = from();
  cases.push(['createToken', 40, () => s.call('backup', 'POST', '/auth/token', { headers: token, body: { api_key: CREDENTIALS.apiKey, secret: 'not-the-secret-000000' }, expect: [401, 429] })]);
  const ip = from();
  cases.push(['getIpInfo', 40, () => s.call('tools', 'GET', '/api/tools/ip-info', { headers: ip, expect: [200, 429] })]);
  const site = from();
  cases.push(['checkSite', 70, () => s.call('tools', 'POST', '/api/tools/check-site', { headers: site, body: { url: `${env.siteOrigin}/` }, expect: [200, 429] })]);
  const news = from();
  cases.push(['subscribeNewsletter', 15, () => s.call('tools', 'POST', '/api/newsletter/subscribe', { headers: news, body: { email: `limit-${Date.now()}-${Math.random()}@example.com`, source: 'limits' }, expect: [201, 429] })]);
  const contact = from();
  cases.push(['submitContact', 10, () => s.call('tools', 'POST', '/api/contacts/general', { headers: contact, body: { name: 'L', email: 'l@example.com', subject: 'L', message: 'L' }, expect: [201, 429] })]);
  // The account limit last: after it, every authenticated call of this account is refused.
  cases.push(['listBackups (account plan)', 150, () => s.call('backup', 'GET', '/backup?limit=1', { expect: [200, 429] })]);
  for (const [name, max, call] of cases) {
    if (!(await exhaust(s, max, call))) s.failures.push(`${name}: no 429 after ${max} calls`);
  }
  // With the account limit spent, the other authenticated operations answer 429 too.
  await s.call('backup', 'GET', '/files', { expect: 429 });
  await s.call('backup', 'GET', `/backup/${MISSING_BACKUP}`, { expect: 429 });
  await s.call('backup', 'POST', `/backup/${MISSING_BACKUP}/cancel`, { expect: 429 });
  await s.call('backup', 'GET', `/restore/${MISSING_RESTORE}`, { expect: 429 });
  await s.call('backup', 'POST', '/backup', { body: { source: env.source }, expect: 429 });
  await s.call('backup', 'POST', '/restore', { body: { backup_id: MISSING_BACKUP, target_path: join(env.allowedRoot, 'x') }, expect: 429 });
  await s.call('backup', 'DELETE', `/backup/${MISSING_BACKUP}`, { expect: 429 });
  await s.call('backup', 'POST', '/retention', { body: { keep_last: 1, dry_run: true }, expect: 429 });
  await s.call('backup', 'POST', '/prune', { body: { dry_run: true }, expect: 429 });
  await s.call('backup', 'POST', '/check', { body: {}, expect: 429 });
  await s.call('backup', 'GET', `/maintenance/${MISSING_MAINTENANCE}`, { expect: 429 });
  await s.call('backup', 'POST', `/maintenance/${MISSING_MAINTENANCE}/cancel`, { expect: 429 });
  await s.call('backup', 'GET', '/usage', { expect: 429 });
}

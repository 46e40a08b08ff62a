/**
 * 503 SERVICE_UNAVAILABLE from outside the server: the test owns the host, so it takes an
 * exclusive lock on the server's SQLite database (DATA_DIR/service.db) while writing operations
 * run. Each then waits out the store's busy timeout and must answer the documented 503 (with
 * Retry-After); reads keep working (WAL readers are not blocked by a writer's lock).
 */
import { DatabaseSync } from 'node:sqlite';
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Session } from '../lib/session.ts';
import { MISSING_BACKUP } from './flows.ts';

export async function storeUnavailableFlows(s: Session, dataDir: string, source: string, allowedRoot: string, backupId: string): Promise<void> {
  const file = join(dataDir, 'service.db');
  if (!existsSync(file)) {
    s.failures.push(`no database at ${file}: the fault flows need to know where the store lives`);
    return;
  }
  const db = new DatabaseSync(file, { timeout: 1000 });
  db.exec('BEGIN EXCLUSIVE');
  try {
    // Each of these writes to the store first; the server's busy timeout is a few seconds.
    await s.call('backup', 'POST', '/backup', { body: { source }, expect: 503 });
    await s.call('backup', 'POST', '/restore', { body: { backup_id: backupId, target_path: join(allowedRoot, 'restore-503') }, expect: 503 });
    await s.call('tools', 'POST', '/api/newsletter/subscribe', { headers: { 'X-Forwarded-For': '198.51.100.251' }, body: { email: 'locked@example.com', source: 'faults' }, expect: 503 });
    await s.call('tools', 'POST', '/api/contacts/general', { headers: { 'X-Forwarded-For': '198.51.100.252' }, body: { name: 'F', email: 'f@example.com', subject: 'F', message: 'F' }, expect: 503 });
    // Reads still answer.
    await s.call('backup', 'GET', `/backup/${backupId}`, { expect: 200 });
    await s.call('backup', 'GET', `/backup/${MISSING_BACKUP}`, { expect: 404 });
    await s.call('backup', 'GET', '/status', { expect: 200 });
    // Readiness takes the write lock in its database check, so it is not ready while the lock is held.
    await s.call('tools', 'GET', '/readyz', { expect: 503 });
    await s.call('tools', 'GET', '/livez', { expect: 200 });
  } finally {
    db.exec('ROLLBACK');
    db.close();
  }
  // And writes work again once the lock is gone; the instance is ready again.
  await s.call('tools', 'GET', '/readyz', { expect: 200 });
  await s.call('tools', 'POST', '/api/newsletter/subscribe', { headers: { 'X-Forwarded-For': '198.51.100.251' }, body: { email: 'locked@example.com', source: 'faults' }, expect: 201 });
}

/**
 * 422 DESTINATION_UNAVAILABLE: the directory of an account's repository is replaced by a file,
 * so the repository cannot be read; usage and delete must say so and change nothing.
 */
export async function destinationUnavailableFlows(s: Session, repoDir: string, backupId: string): Promise<void> {
  if (!existsSync(repoDir)) {
    s.failures.push(`no repository at ${repoDir}: the fault flows need to know where it lives`);
    return;
  }
  renameSync(repoDir, `${repoDir}.away`);
  writeFileSync(repoDir, 'not a repository');
  try {
    await s.call('backup', 'GET', '/usage', { expect: 422 });
    await s.call('backup', 'DELETE', `/backup/${backupId}`, { expect: 422 });
  } finally {
    rmSync(repoDir);
    renameSync(`${repoDir}.away`, repoDir);
  }
  await s.call('backup', 'GET', `/backup/${backupId}`, { expect: 200 });
  await s.call('backup', 'GET', '/usage', { expect: 200 });
}

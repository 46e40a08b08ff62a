import type { DatabaseSync } from 'node:sqlite';
import type { Plan } from '../config.ts';
import { newId } from '../ids.ts';
import { prepare } from './db.ts';

export interface Account {
  id: string;
  plan: Plan;
  createdAt: string;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  secretHash: string;
  label: string | null;
  createdAt: string;
  revokedAt: string | null;
  plan: Plan;
}

interface KeyRow {
  id: string;
  account_id: string;
  secret_hash: string;
  label: string | null;
  created_at: string;
  revoked_at: string | null;
  plan: Plan;
}

function toKey(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    secretHash: row.secret_hash,
    label: row.label,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    plan: row.plan,
  };
}

const KEY_SELECT = `SELECT k.id, k.account_id, k.secret_hash, k.label, k.created_at, k.revoked_at, a.plan
  FROM api_keys k JOIN accounts a ON a.id = k.account_id`;

/** Accounts and their API keys. Secrets arrive here already hashed. */
export class AccountStore {
  private readonly db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  createAccount(plan: Plan, id = newId('acc')): Account {
    const createdAt = new Date().toISOString();
    prepare(this.db, 'INSERT INTO accounts (id, plan, created_at) VALUES (?, ?, ?)').run(id, plan, createdAt);
    return { id, plan, createdAt };
  }

  getAccount(id: string): Account | undefined {
    const row = prepare(this.db, 'SELECT id, plan, created_at FROM accounts WHERE id = ?').get(id) as
      | { id: string; plan: Plan; created_at: string }
      | undefined;
    return row && { id: row.id, plan: row.plan, createdAt: row.created_at };
  }

  setPlan(accountId: string, plan: Plan): void {
    prepare(this.db, 'UPDATE accounts SET plan = ? WHERE id = ?').run(plan, accountId);
  }

  insertKey(key: { id: string; accountId: string; secretHash: string; label?: string | null }): void {
    prepare(this.db, 'INSERT INTO api_keys (id, account_id, secret_hash, label, created_at) VALUES (?, ?, ?, ?, ?)')
      .run(key.id, key.accountId, key.secretHash, key.label ?? null, new Date().toISOString());
  }

  updateKeySecret(id: string, secretHash: string): void {
    prepare(this.db, 'UPDATE api_keys SET secret_hash = ? WHERE id = ?').run(secretHash, id);
  }

  getKey(id: string): ApiKeyRecord | undefined {
    const row = prepare(this.db, `${KEY_SELECT} WHERE k.id = ?`).get(id) as KeyRow | undefined;
    return row && toKey(row);
  }

  listKeys(): ApiKeyRecord[] {
    return (prepare(this.db, `${KEY_SELECT} ORDER BY k.created_at, k.id`).all() as unknown as KeyRow[]).map(toKey);
  }

  countKeys(): number {
    return (prepare(this.db, 'SELECT COUNT(*) AS n FROM api_keys').get() as { n: number }).n;
  }

  /** Marks the key revoked; returns false when no such key exists. Revoking twice keeps the first time. */
  revokeKey(id: string, now = new Date()): boolean {
    const result = prepare(this.db, 'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?')
      .run(now.toISOString(), id);
    return Number(result.changes) > 0;
  }
}

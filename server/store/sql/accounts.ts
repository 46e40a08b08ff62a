import { newId } from '../../ids.ts';
import type { Account, ApiKeyRecord, Plan } from '../records.ts';
import type { AccountStore } from '../store.ts';
import type { Row, Sql } from './executor.ts';

function toAccount(row: Row): Account {
  return { id: row.id as string, plan: row.plan as Plan, createdAt: row.created_at as string };
}

function toKey(row: Row): ApiKeyRecord {
  return {
    id: row.id as string,
    accountId: row.account_id as string,
    secretHash: row.secret_hash as string,
    label: row.label as string | null,
    createdAt: row.created_at as string,
    revokedAt: row.revoked_at as string | null,
    plan: row.plan as Plan,
  };
}

const KEY_SELECT = `SELECT k.id, k.account_id, k.secret_hash, k.label, k.created_at, k.revoked_at, a.plan
  FROM api_keys k JOIN accounts a ON a.id = k.account_id`;
const KEY_BY_ID = `${KEY_SELECT} WHERE k.id = ?`;

export class SqlAccountStore implements AccountStore {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  async createAccount(plan: Plan, id = newId('acc'), sql = this.sql): Promise<Account> {
    const row = await sql.get(`INSERT INTO accounts (id, plan, created_at) VALUES (?, ?, ${sql.dialect.now}) RETURNING id, plan, created_at`, [id, plan]);
    return toAccount(row!);
  }

  createAccountWithKey(plan: Plan, key: { id: string; secretHash: string; label: string | null }): Promise<Account> {
    return this.sql.transaction(async (tx) => {
      const account = await this.createAccount(plan, undefined, tx);
      await this.insertKey({ ...key, accountId: account.id }, tx);
      return account;
    });
  }

  async getAccount(id: string): Promise<Account | undefined> {
    const row = await this.sql.get('SELECT id, plan, created_at FROM accounts WHERE id = ?', [id]);
    return row && toAccount(row);
  }

  async setPlan(accountId: string, plan: Plan): Promise<void> {
    await this.sql.run('UPDATE accounts SET plan = ? WHERE id = ?', [plan, accountId]);
  }

  async insertKey(key: { id: string; accountId: string; secretHash: string; label?: string | null }, sql = this.sql): Promise<void> {
    await sql.run(`INSERT INTO api_keys (id, account_id, secret_hash, label, created_at) VALUES (?, ?, ?, ?, ${sql.dialect.now})`, [
      key.id,
      key.accountId,
      key.secretHash,
      key.label ?? null,
    ]);
  }

  async updateKeySecret(id: string, secretHash: string): Promise<void> {
    await this.sql.run('UPDATE api_keys SET secret_hash = ? WHERE id = ?', [secretHash, id]);
  }

  async getKey(id: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.sql.get(KEY_BY_ID, [id]);
    return row && toKey(row);
  }

  async listKeys(): Promise<ApiKeyRecord[]> {
    return (await this.sql.all(`${KEY_SELECT} ORDER BY k.created_at, k.id`)).map(toKey);
  }

  async countKeys(): Promise<number> {
    return Number((await this.sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM api_keys'))!.n);
  }

  async keysVersion(): Promise<number> {
    return Number((await this.sql.get<{ version: number | string }>('SELECT version FROM key_epoch WHERE id = 1'))!.version);
  }

  async revokeKey(id: string, now = new Date()): Promise<boolean> {
    return (await this.sql.run('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?', [now.toISOString(), id])) > 0;
  }
}

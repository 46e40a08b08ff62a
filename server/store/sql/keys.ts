import { SHARED_SECRETS, type WrappedRepositoryKey } from '../records.ts';
import type { KeyStore } from '../store.ts';
import type { Sql } from './executor.ts';

const MASTER = SHARED_SECRETS.master;

export class SqlKeyStore implements KeyStore {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  async repositoryKey(accountId: string, destination: string): Promise<Uint8Array | undefined> {
    const row = await this.sql.get<{ wrapped: Uint8Array }>('SELECT wrapped FROM repository_keys WHERE account_id = ? AND destination = ?', [accountId, destination]);
    return row?.wrapped;
  }

  async insertRepositoryKey(key: WrappedRepositoryKey): Promise<Uint8Array> {
    await this.sql.run(
      `INSERT INTO repository_keys (account_id, destination, wrapped, created_at) VALUES (?, ?, ?, ${this.sql.dialect.now})
       ON CONFLICT (account_id, destination) DO NOTHING`,
      [key.accountId, key.destination, key.wrapped],
    );
    return (await this.repositoryKey(key.accountId, key.destination))!;
  }

  async countRepositoryKeys(): Promise<number> {
    return Number((await this.sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM repository_keys'))!.n);
  }

  async fingerprint(name: string, fingerprint: string, sql = this.sql): Promise<string> {
    await sql.run(`INSERT INTO secret_fingerprints (name, fingerprint, recorded_at) VALUES (?, ?, ${sql.dialect.now}) ON CONFLICT (name) DO NOTHING`, [
      name,
      fingerprint,
    ]);
    return (await sql.get<{ fingerprint: string }>('SELECT fingerprint FROM secret_fingerprints WHERE name = ?', [name]))!.fingerprint;
  }

  rotateMaster(from: string, to: string, rewrap: (key: WrappedRepositoryKey) => Uint8Array): Promise<boolean> {
    return this.sql.transaction(
      async (tx) => {
        if ((await this.fingerprint(MASTER, from, tx)) !== from) return false;
        const rows = await tx.all<{ account_id: string; destination: string; wrapped: Uint8Array }>(
          'SELECT account_id, destination, wrapped FROM repository_keys ORDER BY account_id, destination',
        );
        for (const r of rows) {
          const wrapped = rewrap({ accountId: r.account_id, destination: r.destination, wrapped: r.wrapped });
          await tx.run('UPDATE repository_keys SET wrapped = ? WHERE account_id = ? AND destination = ?', [wrapped, r.account_id, r.destination]);
        }
        await tx.run(`UPDATE secret_fingerprints SET fingerprint = ?, recorded_at = ${tx.dialect.now} WHERE name = ?`, [to, MASTER]);
        return true;
      },
      { locks: ['keys:master'] },
    );
  }
}

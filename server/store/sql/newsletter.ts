import { normalizeEmail, type Subscriber } from '../records.ts';
import type { NewsletterStore } from '../store.ts';
import type { Sql } from './executor.ts';

export class SqlNewsletterStore implements NewsletterStore {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  async subscribe(email: string, source: string): Promise<{ subscriber: Subscriber; created: boolean }> {
    const normalized = normalizeEmail(email);
    const created = await this.sql.run(
      `INSERT INTO newsletter_subscribers (email, source, status, subscribed_at) VALUES (?, ?, 'subscribed', ${this.sql.dialect.now})
       ON CONFLICT (email) DO NOTHING`,
      [normalized, source],
    );
    const row = (await this.sql.get<{ email: string; source: string; status: 'subscribed'; subscribed_at: string }>(
      'SELECT email, source, status, subscribed_at FROM newsletter_subscribers WHERE email = ?',
      [normalized],
    ))!;
    return { subscriber: { email: row.email, source: row.source, status: row.status, subscribedAt: row.subscribed_at }, created: created > 0 };
  }

  async count(): Promise<number> {
    return Number((await this.sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM newsletter_subscribers'))!.n);
  }
}

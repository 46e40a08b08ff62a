import type { DatabaseSync } from 'node:sqlite';
import { prepare } from './db.ts';

export interface Subscriber {
  email: string;
  source: string;
  status: 'subscribed';
  subscribedAt: string;
}

/** The domain of an addr-spec is case-insensitive; the local part is kept as given (RFC 5321 2.4). */
export function normalizeEmail(email: string): string {
  const at = email.lastIndexOf('@');
  return at < 0 ? email : email.slice(0, at) + '@' + email.slice(at + 1).toLowerCase();
}

/** Newsletter subscribers, unique on the normalized address. */
export class NewsletterStore {
  private readonly db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  /** Subscribes once; a repeat returns the existing record with created=false. */
  subscribe(email: string, source: string): { subscriber: Subscriber; created: boolean } {
    const normalized = normalizeEmail(email);
    const res = prepare(this.db, 
        `INSERT INTO newsletter_subscribers (email, source, status, subscribed_at) VALUES (?, ?, 'subscribed', ?)
         ON CONFLICT(email) DO NOTHING`,
      )
      .run(normalized, source, new Date().toISOString());
    const row = prepare(this.db, 'SELECT email, source, status, subscribed_at FROM newsletter_subscribers WHERE email = ?')
      .get(normalized) as { email: string; source: string; status: 'subscribed'; subscribed_at: string };
    return {
      subscriber: { email: row.email, source: row.source, status: row.status, subscribedAt: row.subscribed_at },
      created: Number(res.changes) > 0,
    };
  }
}

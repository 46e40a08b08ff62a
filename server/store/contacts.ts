import type { DatabaseSync } from 'node:sqlite';
import { newId } from '../ids.ts';
import { prepare } from './db.ts';

export const CONTACT_TYPES = ['general', 'sales', 'support', 'feedback', 'report-issue'] as const;
export type ContactType = (typeof CONTACT_TYPES)[number];

export interface ContactMessage {
  id: string;
  type: ContactType;
  receivedAt: string;
}

/** Contact-form messages. The insert is an autocommit statement under synchronous=FULL: durable on return. */
export class ContactStore {
  private readonly db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  insert(m: { type: ContactType; name: string; email: string; subject: string; message: string; clientIp: string | null }): ContactMessage {
    const id = newId('msg');
    const receivedAt = new Date().toISOString();
    prepare(this.db, 
        `INSERT INTO contact_messages (id, type, name, email, subject, message, client_ip, received_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, m.type, m.name, m.email, m.subject, m.message, m.clientIp, receivedAt);
    return { id, type: m.type, receivedAt };
  }

  count(): number {
    return (prepare(this.db, 'SELECT COUNT(*) AS n FROM contact_messages').get() as { n: number }).n;
  }
}

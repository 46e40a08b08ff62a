import { newId } from '../../ids.ts';
import type { ContactMessage, ContactType, NewContactMessage } from '../records.ts';
import type { ContactStore } from '../store.ts';
import type { Sql } from './executor.ts';

/** The insert is one autocommit statement, durable on return (SQLite synchronous=FULL; PostgreSQL's commit). */
export class SqlContactStore implements ContactStore {
  private readonly sql: Sql;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  async insert(m: NewContactMessage): Promise<ContactMessage> {
    const row = (await this.sql.get<{ id: string; type: ContactType; received_at: string }>(
      `INSERT INTO contact_messages (id, type, name, email, subject, message, client_ip, received_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ${this.sql.dialect.now}) RETURNING id, type, received_at`,
      [newId('msg'), m.type, m.name, m.email, m.subject, m.message, m.clientIp],
    ))!;
    return { id: row.id, type: row.type, receivedAt: row.received_at };
  }

  async get(id: string): Promise<(NewContactMessage & ContactMessage) | undefined> {
    const r = await this.sql.get('SELECT id, type, name, email, subject, message, client_ip, received_at FROM contact_messages WHERE id = ?', [id]);
    if (!r) return undefined;
    return {
      id: r.id as string,
      type: r.type as ContactType,
      name: r.name as string,
      email: r.email as string,
      subject: r.subject as string,
      message: r.message as string,
      clientIp: r.client_ip as string | null,
      receivedAt: r.received_at as string,
    };
  }

  async count(): Promise<number> {
    return Number((await this.sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM contact_messages'))!.n);
  }
}

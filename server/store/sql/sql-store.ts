import type { JobEvents, Store } from '../store.ts';
import { SqlAccountStore } from './accounts.ts';
import { SqlContactStore } from './contacts.ts';
import type { Sql } from './executor.ts';
import { SqlFileStore } from './files.ts';
import { SqlJobStore } from './jobs.ts';
import { SqlKeyStore } from './keys.ts';
import { SqlNewsletterStore } from './newsletter.ts';

/** The Store on a SQL database: the concerns share one executor; the database's module supplies it, the events and close. */
export class SqlStore implements Store {
  readonly accounts: SqlAccountStore;
  readonly jobs: SqlJobStore;
  readonly files: SqlFileStore;
  readonly newsletter: SqlNewsletterStore;
  readonly contacts: SqlContactStore;
  readonly keys: SqlKeyStore;
  readonly events: JobEvents;
  private readonly sql: Sql;
  private readonly onClose: () => Promise<void>;
  private closing: Promise<void> | null = null;

  /** `sharedByInstances`: other servers may use the same database (PostgreSQL). */
  constructor(sql: Sql, events: JobEvents, onClose: () => Promise<void>, options: { sharedByInstances?: boolean } = {}) {
    this.sql = sql;
    this.events = events;
    this.onClose = onClose;
    this.accounts = new SqlAccountStore(sql);
    this.jobs = new SqlJobStore(sql, options);
    this.files = new SqlFileStore(sql);
    this.newsletter = new SqlNewsletterStore(sql);
    this.contacts = new SqlContactStore(sql);
    this.keys = new SqlKeyStore(sql);
  }

  /** Reads, and takes (then releases) a write lock: a database that could not take a write says so here. */
  ping(): Promise<void> {
    return this.sql.transaction(async (tx) => {
      await tx.get('SELECT 1 AS ok');
    });
  }

  close(): Promise<void> {
    this.closing ??= this.onClose();
    return this.closing;
  }
}

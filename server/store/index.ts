import type { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { AccountStore } from './accounts.ts';
import { ContactStore } from './contacts.ts';
import { openDatabase, prepare } from './db.ts';
import { FileStore } from './files.ts';
import { JobStore } from './jobs.ts';
import { NewsletterStore } from './newsletter.ts';

/** The service database (DATA_DIR/service.db) and its tables, one class per concern. */
export class Store {
  readonly db: DatabaseSync;
  readonly accounts: AccountStore;
  readonly jobs: JobStore;
  readonly files: FileStore;
  readonly newsletter: NewsletterStore;
  readonly contacts: ContactStore;

  constructor(db: DatabaseSync) {
    this.db = db;
    this.accounts = new AccountStore(db);
    this.jobs = new JobStore(db);
    this.files = new FileStore(db);
    this.newsletter = new NewsletterStore(db);
    this.contacts = new ContactStore(db);
  }

  static open(dataDir: string): Store {
    return new Store(openDatabase(join(dataDir, 'service.db')));
  }

  /** The status check: the database reads, and its write lock can be taken (nothing is written). */
  ping(): boolean {
    const ok = (prepare(this.db, 'SELECT 1 AS ok').get() as { ok: number }).ok === 1;
    this.db.exec('BEGIN IMMEDIATE');
    this.db.exec('ROLLBACK');
    return ok;
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }
}

export type { Account, ApiKeyRecord } from './accounts.ts';
export type { ContactMessage, ContactType } from './contacts.ts';
export type { FileRecord } from './files.ts';
export type { BackupJob, JobError, JobKind, JobStatus, JobWarnings, Progress, RestoreJob } from './jobs.ts';
export type { Subscriber } from './newsletter.ts';

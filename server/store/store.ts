import type {
  Account,
  ApiKeyRecord,
  BackupJob,
  BackupResult,
  ContactMessage,
  FilePage,
  FileRecord,
  Job,
  JobError,
  JobKind,
  JobStatus,
  MaintenanceJob,
  MaintenanceResult,
  NewBackup,
  NewMaintenance,
  NewContactMessage,
  NewRestore,
  Plan,
  Progress,
  RestoreJob,
  RestoreResult,
  Subscriber,
  Warnings,
  WrappedRepositoryKey,
} from './records.ts';

/**
 * The Store: everything the server keeps outside the repositories, split by concern. Two
 * implementations (SQLite in DATA_DIR, PostgreSQL from DATABASE_URL) pass one suite (suite.ts).
 * Only they know SQL, a driver or its error codes; they fail with the errors of errors.ts.
 */
export interface Store {
  readonly accounts: AccountStore;
  readonly jobs: JobStore;
  readonly files: FileStore;
  readonly newsletter: NewsletterStore;
  readonly contacts: ContactStore;
  readonly keys: KeyStore;
  readonly events: JobEvents;
  /** The health check: resolves when the database reads and can take a write lock. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Accounts and their API keys. Secrets arrive here already hashed. */
export interface AccountStore {
  createAccount(plan: Plan, id?: string): Promise<Account>;
  /** A new account and its first key, in one transaction. */
  createAccountWithKey(plan: Plan, key: { id: string; secretHash: string; label: string | null }): Promise<Account>;
  getAccount(id: string): Promise<Account | undefined>;
  setPlan(accountId: string, plan: Plan): Promise<void>;
  insertKey(key: { id: string; accountId: string; secretHash: string; label?: string | null }): Promise<void>;
  updateKeySecret(id: string, secretHash: string): Promise<void>;
  getKey(id: string): Promise<ApiKeyRecord | undefined>;
  listKeys(): Promise<ApiKeyRecord[]>;
  countKeys(): Promise<number>;
  /** Marks the key revoked; false when no such key exists. Revoking twice keeps the first time. */
  revokeKey(id: string, now?: Date): Promise<boolean>;
  /** A number that changes whenever any key or account changes (revoked, re-secreted, re-planned, deleted), by any writer. */
  keysVersion(): Promise<number>;
}

/**
 * What the scheduler chooses from: for each repository without a running job, its oldest queued
 * job (jobs of one repository run in the order they were queued), with how busy its account is
 * (on every instance).
 */
export interface QueueCandidate {
  id: string;
  kind: JobKind;
  accountId: string;
  repository: string;
  queuedAt: string;
  /** Jobs of this account running now. */
  accountRunning: number;
  /** When a job of this account last started (ISO time), or null. */
  accountLastStartedAt: string | null;
}

/**
 * One compare-and-set of a job's status: applied only when the job is in one of `from` (and the
 * guards hold), atomically with the fields it writes. Ending a backup other than `completed`
 * drops whatever listing it had appended.
 */
export interface StatusChange {
  kind: JobKind;
  id: string;
  from: readonly JobStatus[];
  to: JobStatus;
  /** queued → running: refused while the repository has a running job or the account runs `accountCap` jobs. */
  claim?: { owner: string; leaseMs: number; accountCap: number };
  /** Only while the job is held by this owner. */
  owner?: string;
  /** Only once the job's lease has run out (its holder stopped renewing). */
  leaseExpired?: boolean;
  error?: JobError | null;
  progress?: Progress;
  warnings?: Warnings;
  result?: BackupResult | RestoreResult | MaintenanceResult;
}

export interface JobSummary {
  queued: number;
  running: number;
  /** When the oldest queued job was created (ISO time), or null when none waits. */
  oldestQueuedAt: string | null;
  /** Per destination with a completed backup: when the newest one finished, and what completed backups stored. */
  destinations: Array<{ destination: string; lastCompletedAt: string; storedBytes: number }>;
}

/** Backup and restore jobs, and the primitives the job queue is built on. */
export interface JobStore {
  /** Inserts a queued job; null (nothing inserted) when its account already has `queueLimit` queued. */
  insertBackup(job: NewBackup, queueLimit: number): Promise<BackupJob | null>;
  insertRestore(job: NewRestore, queueLimit: number): Promise<RestoreJob | null>;
  /** Inserts a queued maintenance job unless one of the same repository is queued or running: then that one is returned (`inserted` false). */
  insertMaintenance(job: NewMaintenance, queueLimit: number): Promise<{ job: MaintenanceJob; inserted: boolean } | null>;
  /** With accountId, answers only that account's job (another account's id looks missing). */
  get(id: string, accountId?: string): Promise<Job | undefined>;
  getBackup(id: string, accountId?: string): Promise<BackupJob | undefined>;
  getRestore(id: string, accountId?: string): Promise<RestoreJob | undefined>;
  getMaintenance(id: string, accountId?: string): Promise<MaintenanceJob | undefined>;
  /** The newest completed prune dry run of a repository (what usage reports as reclaimable). */
  lastPruneDryRun(accountId: string, destination: string): Promise<MaintenanceJob | undefined>;
  /** Writes the step a running maintenance job held by `owner` is at. */
  updatePhase(id: string, owner: string, phase: string): Promise<void>;
  /**
   * Repositories (account, destination) with completed backups and no `operation` job (a prune
   * that is no dry run, or a check) queued since `since` (ISO time): those the schedule is due to run.
   */
  maintenanceDue(operation: 'prune' | 'check', since: string): Promise<Array<{ accountId: string; destination: string }>>;
  /** Completed backups (not deleted), optionally of one source and/or destination, newest first. */
  completedBackups(accountId: string, filter: { source?: string; destination?: string }): Promise<BackupJob[]>;
  /**
   * Deletes a final backup of the account: it no longer appears anywhere, and its listing is
   * dropped. Answers the deleted job, or its status when it is not final (nothing changed), or
   * undefined when there is no such backup.
   */
  deleteBackup(id: string, accountId: string): Promise<BackupJob | JobStatus | undefined>;
  /**
   * Resolves once every server sharing the store has stopped answering backups deleted before the
   * call (finished jobs are cached): at once when this is the only one, after
   * JOB_CHANGES_SEEN_WITHIN_MS when other instances share it.
   */
  deletionsSeen(): Promise<void>;
  /** Newest first; `before` is the last id of the previous page (ids sort by creation time). */
  listBackups(accountId: string, opts: { limit: number; before?: string; status?: JobStatus }): Promise<BackupJob[]>;
  newestCompletedBackup(accountId: string): Promise<BackupJob | undefined>;
  /** Writes progress of a running job held by `owner`. */
  updateProgress(id: string, owner: string, progress: Progress): Promise<void>;
  counts(): Promise<{ queued: number; running: number }>;
  /** Figures for monitoring over all accounts (the same on every instance sharing the store). */
  summary(): Promise<JobSummary>;

  // The queue's primitives; server/jobs/ uses them, nothing else does.
  candidates(): Promise<QueueCandidate[]>;
  /** The one writer of job status. Only server/jobs/state.ts calls it (a test checks). */
  transition(change: StatusChange): Promise<boolean>;
  /** Extends the leases `owner` still holds; says which of `ids` it holds and which were asked to cancel. */
  renewLeases(owner: string, ids: readonly string[], leaseMs: number): Promise<{ held: string[]; cancelRequested: string[] }>;
  /** Flags a running job for cancellation (its holder stops it); false when it is not running. */
  requestCancel(id: string): Promise<boolean>;
  /** Running jobs whose lease has run out. */
  expired(): Promise<Array<{ kind: JobKind; id: string }>>;
  /** Every running job (start-up recovery when this process is the only one). */
  running(): Promise<Array<{ kind: JobKind; id: string }>>;
}

/**
 * Each completed backup's file listing, appended in batches while the backup runs and paged in
 * byte order of path. A position (`after`, `next`) is a small integer whatever the path length.
 */
export interface FileStore {
  append(backupId: string, records: readonly FileRecord[]): Promise<void>;
  /** The listing is whole: readies what was appended for paging (on PostgreSQL, a VACUUM ANALYZE). */
  settle(): Promise<void>;
  /** Entries whose path starts with `prefix` (bytes), in byte order, after the entry at position `after`. */
  page(backupId: string, opts: { prefix?: Uint8Array; after?: number; limit: number }): Promise<FilePage>;
  /** Whether `path` is an entry of the backup or a directory holding entries. */
  matches(backupId: string, path: Uint8Array): Promise<boolean>;
}

/** Newsletter subscribers, unique on the normalized address. */
export interface NewsletterStore {
  /** Subscribes once; a repeat returns the existing record with created=false. */
  subscribe(email: string, source: string): Promise<{ subscriber: Subscriber; created: boolean }>;
  count(): Promise<number>;
}

/** Contact-form messages, durable once insert resolves. */
export interface ContactStore {
  insert(message: NewContactMessage): Promise<ContactMessage>;
  get(id: string): Promise<(NewContactMessage & ContactMessage) | undefined>;
  count(): Promise<number>;
}

/** Repository keys (wrapped by the master key) and the fingerprints of the secrets every instance must share. */
export interface KeyStore {
  repositoryKey(accountId: string, destination: string): Promise<Uint8Array | undefined>;
  /** Keeps the key unless the repository has one; returns the one kept, so concurrent first uses agree. */
  insertRepositoryKey(key: WrappedRepositoryKey): Promise<Uint8Array>;
  countRepositoryKeys(): Promise<number>;
  /** Records `fingerprint` for the secret `name` unless one is on record; returns the one on record. */
  fingerprint(name: string, fingerprint: string): Promise<string>;
  /**
   * In one transaction: rewraps every repository key and records `to` as the master key's
   * fingerprint. False (nothing changed) when the recorded fingerprint is not `from`.
   */
  rotateMaster(from: string, to: string, rewrap: (key: WrappedRepositoryKey) => Uint8Array): Promise<boolean>;
}

/** Job notifications between instances (in process for SQLite, LISTEN/NOTIFY for PostgreSQL). */
export type JobEvent = { type: 'queued' | 'settled' | 'cancel'; id: string };

export interface JobEvents {
  publish(event: JobEvent): Promise<void>;
  /**
   * Calls `listener` for every event of every instance. `resync` means events may have been
   * missed (a lost connection came back): listeners re-read what they wait for.
   */
  subscribe(listener: (event: JobEvent | { type: 'resync' }) => void): () => void;
}

/** The records the Store keeps, as the rest of the server sees them (no SQL, no driver types). */
import type { Plan } from '../config.ts';

export type { Plan };

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

/** Job kinds; a new kind adds its own detail table and result fields. */
export type JobKind = 'backup' | 'restore' | 'maintenance';
export type JobStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
export const FINAL_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'cancelled'];

export interface Progress {
  filesDone: number;
  filesTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

export interface JobError {
  code: string;
  message: string;
}

/** What a job could not do though it completed: the total and the first items (paths as the API shows them). */
export interface Warnings {
  count: number;
  items: Array<{ path: string; reason: string }>;
}

export const NO_WARNINGS: Warnings = { count: 0, items: [] };
/** Warning items kept per job; `count` keeps the total. */
export const MAX_WARNING_ITEMS = 100;

interface CommonJob {
  id: string;
  accountId: string;
  /** The lock key of the repository the job uses: no two jobs of one repository run at once. */
  repository: string;
  status: JobStatus;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  progress: Progress;
  error: JobError | null;
  warnings: Warnings;
}

export interface BackupJob extends CommonJob {
  kind: 'backup';
  source: string;
  destination: string;
  compression: 'zstd' | 'gzip' | 'none';
  encryption: boolean;
  deduplication: boolean;
  filesBackedUp: number;
  sizeBytes: number;
  storedBytes: number;
  snapshotId: string | null;
}

export interface RestoreJob extends CommonJob {
  kind: 'restore';
  backupId: string;
  targetPath: string;
  /** As the client sent them (escaped text, see server/escaped-path.ts); null restores everything. */
  paths: string[] | null;
  overwrite: 'never' | 'if_changed' | 'always';
  filesRestored: number;
  filesSkipped: number;
  sizeBytes: number;
}

/** A prune or check of one repository; its result is the API's result object, kept as it is. */
export interface MaintenanceJob extends CommonJob {
  kind: 'maintenance';
  operation: 'prune' | 'check';
  destination: string;
  trigger: 'request' | 'schedule';
  dryRun: boolean;
  readData: boolean;
  /** A share of the packs, as the request gave it ("10%"), or null. */
  readDataSubset: string | null;
  /** The step it is at (the runner's report); null while queued. */
  phase: string | null;
  outcome: Record<string, unknown> | null;
}

export type Job = BackupJob | RestoreJob | MaintenanceJob;

export type NewBackup = Pick<BackupJob, 'id' | 'accountId' | 'repository' | 'source' | 'destination' | 'compression' | 'encryption' | 'deduplication'>;
export type NewRestore = Pick<RestoreJob, 'id' | 'accountId' | 'repository' | 'backupId' | 'targetPath' | 'paths' | 'overwrite'>;
export type NewMaintenance = Pick<MaintenanceJob, 'id' | 'accountId' | 'repository' | 'operation' | 'destination' | 'trigger' | 'dryRun' | 'readData' | 'readDataSubset'>;

/** The result columns a job's completion writes, per kind. */
export type BackupResult = Pick<BackupJob, 'snapshotId' | 'filesBackedUp' | 'sizeBytes' | 'storedBytes'>;
export type RestoreResult = Pick<RestoreJob, 'filesRestored' | 'filesSkipped' | 'sizeBytes'>;
export type MaintenanceResult = Pick<MaintenanceJob, 'outcome'>;

/** One entry of a backup's file listing. Names are bytes, as the filesystem has them. */
export interface FileRecord {
  path: Uint8Array;
  type: 'file' | 'directory' | 'symlink';
  sizeBytes: number;
  mode: number;
  modifiedAt: string;
  sha256: string | null;
  linkTarget: Uint8Array | null;
}

export interface FilePage {
  items: FileRecord[];
  /** The position of the last item, for the next page's `after`; null when this was the last page. */
  next: number | null;
}

export interface Subscriber {
  email: string;
  source: string;
  status: 'subscribed';
  subscribedAt: string;
}

export const CONTACT_TYPES = ['general', 'sales', 'support', 'feedback', 'report-issue'] as const;
export type ContactType = (typeof CONTACT_TYPES)[number];

export interface ContactMessage {
  id: string;
  type: ContactType;
  receivedAt: string;
}

export interface NewContactMessage {
  type: ContactType;
  name: string;
  email: string;
  subject: string;
  message: string;
  clientIp: string | null;
}

/** A repository's key, wrapped by the server master key (see server/keys/). */
export interface WrappedRepositoryKey {
  accountId: string;
  destination: string;
  wrapped: Uint8Array;
}

/** The domain of an addr-spec is case-insensitive; the local part is kept as given (RFC 5321 2.4). */
export function normalizeEmail(email: string): string {
  const at = email.lastIndexOf('@');
  return at < 0 ? email : email.slice(0, at) + '@' + email.slice(at + 1).toLowerCase();
}

/** The secrets every instance must share, by the name their fingerprints are kept under. */
export const SHARED_SECRETS = { master: 'master-key', tokenSigning: 'token-signing-key' } as const;

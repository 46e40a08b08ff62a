export { createBackupClient, needsBearer, type BackupClient, type BackupClientOptions, type BackupPaths } from './backup.ts';
export { createToolsClient, type ToolsClient, type ToolsClientOptions, type ToolsPaths } from './tools.ts';
export {
  ApiClientError,
  errorCatalogue,
  errorInfo,
  isApiClientError,
  type ApiErrorCode,
  type ClientErrorCode,
  type ErrorCatalogueEntry,
  type ErrorCode,
  type JobErrorCode,
} from './errors.ts';
export {
  FINISHED_STATUSES,
  followBackup,
  followRestore,
  isFinished,
  startBackup,
  startRestore,
  type BackupJob,
  type CreateBackupRequest,
  type CreateRestoreRequest,
  type FollowOptions,
  type JobStatus,
  type RestoreJob,
} from './jobs.ts';
export type { RetryOptions } from './retry.ts';
export type { FetchFunction, RetryEvent } from './transport.ts';

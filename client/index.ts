export { createBackupClient, type BackupClient, type BackupClientOptions, type BackupPaths } from './backup.ts';
export { createToolsClient, type ToolsClient, type ToolsClientOptions, type ToolsPaths } from './tools.ts';
export { ApiClientError, isApiClientError, type ApiErrorCode, type ClientErrorCode, type ErrorCode } from './errors.ts';
export type { RetryOptions } from './retry.ts';
export type { FetchFunction, RetryEvent } from './transport.ts';

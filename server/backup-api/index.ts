import type { BackupHandlers } from '../../generated/backup-handlers.ts';
import type { RequestContext } from '../context.ts';
import { cancelBackup } from './cancel-backup.ts';
import { createBackup } from './create-backup.ts';
import { createCheck, createPrune } from './create-maintenance.ts';
import { deleteBackup } from './delete-backup.ts';
import { createRestore } from './create-restore.ts';
import { createToken } from './create-token.ts';
import { getBackup } from './get-backup.ts';
import { cancelMaintenanceJob, getMaintenanceJob } from './get-maintenance.ts';
import { getRestore } from './get-restore.ts';
import { getStatus } from './get-status.ts';
import { getUsage } from './get-usage.ts';
import { listBackups } from './list-backups.ts';
import { listFiles } from './list-files.ts';
import { submitRetentionPolicy } from './submit-retention-policy.ts';

/** The Backup API: one handler per operation of the generated table (tsc fails on a missing one). */
export const backupHandlers: BackupHandlers<RequestContext> = {
  createToken,
  createBackup,
  listBackups,
  getBackup,
  cancelBackup,
  createRestore,
  getRestore,
  listFiles,
  getStatus,
  deleteBackup,
  submitRetentionPolicy,
  createPrune,
  createCheck,
  getMaintenanceJob,
  cancelMaintenanceJob,
  getUsage,
};

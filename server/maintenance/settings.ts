import { parseInt10 } from '../config-values.ts';

/**
 * The server's maintenance schedule: each repository with backups gets a prune every
 * MAINTENANCE_PRUNE_HOURS and a check (reading MAINTENANCE_CHECK_READ_PERCENT of its packs) every
 * MAINTENANCE_CHECK_HOURS; 0 turns one off. Off by default in the embedded mode (a desktop
 * service prunes when its user asks); weekly by default with a database server.
 */
export interface MaintenanceSettings {
  pruneHours: number;
  checkHours: number;
  checkReadPercent: number;
}

export function loadMaintenanceSettings(env: NodeJS.ProcessEnv, distributed: boolean): MaintenanceSettings {
  const every = distributed ? 168 : 0;
  return {
    pruneHours: parseInt10('MAINTENANCE_PRUNE_HOURS', env.MAINTENANCE_PRUNE_HOURS, every, 0, 87_600),
    checkHours: parseInt10('MAINTENANCE_CHECK_HOURS', env.MAINTENANCE_CHECK_HOURS, every, 0, 87_600),
    checkReadPercent: parseInt10('MAINTENANCE_CHECK_READ_PERCENT', env.MAINTENANCE_CHECK_READ_PERCENT, 5, 0, 100),
  };
}

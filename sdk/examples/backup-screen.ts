/**
 * A backup screen's logic, as a frontend writes it with the SDK: the recent backups, a new backup
 * followed to its end with progress, its files, and a restore of it. The same code runs against
 * the mock and the server: only `apiUrl` (and real credentials and paths) differ.
 */
import { ApiClientError, createBackupClient, errorInfo, startBackup, startRestore, type BackupJob } from '@backup-service/client';

export interface ScreenConfig {
  /** The mock: http://127.0.0.1:4010/api/v1; the server: http://localhost:8080/api/v1. */
  apiUrl: string;
  apiKey: string;
  secret: string;
}

/** Where the screen shows things (a component's state in a real frontend). */
export interface View {
  show(line: string): void;
}

export async function backupScreen(config: ScreenConfig, paths: { source: string; restoreTo: string }, view: View): Promise<BackupJob | undefined> {
  const client = createBackupClient({ baseUrl: config.apiUrl, apiKey: config.apiKey, secret: config.secret });
  try {
    const { data: recent } = await client.GET('/backup', { params: { query: { limit: 10 } } });
    view.show(`${recent!.data.items.length} recent backups`);

    const job = await startBackup(client, { source: paths.source }, {
      intervalMs: 500,
      onUpdate: (j) => view.show(`backup ${j.status}: ${j.progress.bytes_done} of ${j.progress.bytes_total} bytes`),
    });
    if (job.status !== 'completed') {
      view.show(`backup ${job.status}${job.error ? `: ${job.error.message}` : ''}`);
      return job;
    }

    const { data: files } = await client.GET('/files', { params: { query: { backup_id: job.id, limit: 50 } } });
    for (const file of files!.data.items) view.show(`${file.type} ${file.path}`);

    const restore = await startRestore(client, { backup_id: job.id, target_path: paths.restoreTo }, { intervalMs: 500 });
    view.show(`restore ${restore.status}: ${restore.files_restored} files`);
    return job;
  } catch (error) {
    if (!(error instanceof ApiClientError)) throw error;
    // The catalogue says what to do; the request id is what support asks for.
    view.show(`${error.code}: ${errorInfo(error.code)?.action ?? error.message} (request ${error.requestId})`);
    return undefined;
  }
}

// The frontend example's page script: a form, the SDK (@backup-service/client), and startBackup.
import { createBackupClient, isApiClientError, startBackup } from '@backup-service/client';

const form = document.getElementById('backup-form');
const status = document.getElementById('status');
const log = document.getElementById('log');

// ?api=<base URL>&key=…&secret=…&source=… fill the form (the docs test points the page at its mock and server).
const query = new URLSearchParams(location.search);
for (const [param, field] of [['api', 'api'], ['key', 'apiKey'], ['secret', 'secret'], ['source', 'source']]) {
  if (query.get(param)) form.elements[field].value = query.get(param);
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const values = Object.fromEntries(new FormData(form));
  // Only the base URL tells the mock from the server.
  const client = createBackupClient({ baseUrl: values.api, apiKey: values.apiKey, secret: values.secret });
  status.textContent = 'running';
  log.textContent = '';
  try {
    const job = await startBackup(
      client,
      { source: values.source, destination: values.destination },
      {
        intervalMs: 500,
        onUpdate: (job) => {
          const { files_done, files_total } = job.progress;
          log.textContent += `${job.id}  ${job.status}  ${files_done}/${files_total} files\n`;
        },
      },
    );
    status.textContent = `finished: ${job.status}`;
  } catch (error) {
    // Every failure is an ApiClientError: HTTP errors carry the envelope's code and details.
    status.textContent = isApiClientError(error)
      ? `error ${error.status} ${error.code}: ${error.message} (request ${error.requestId})`
      : `error: ${error}`;
  }
});

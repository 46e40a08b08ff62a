// The frontend example's page script: a form, the typed client, and createAndPoll.
import { createBackupClient, isApiClientError } from './js/client/index.js';
import { createAndPoll } from './js/client/examples/create-and-poll.js';

const form = document.getElementById('backup-form');
const status = document.getElementById('status');
const log = document.getElementById('log');

// ?api=<base URL> points the page at another server (the docs test uses it for its mock).
const api = new URLSearchParams(location.search).get('api');
if (api) form.elements.api.value = api;

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const values = Object.fromEntries(new FormData(form));
  const client = createBackupClient({ baseUrl: values.api, apiKey: values.apiKey, secret: values.secret });
  status.textContent = 'running';
  log.textContent = '';
  try {
    const job = await createAndPoll(
      client,
      { source: values.source, destination: values.destination },
      {
        intervalMs: 1000,
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

// The baseline for `npm run bench:http`: a bare Express app answering the two benchmarked routes
// with the same JSON the service sends (read from BARE_BODIES), with no validation, auth,
// rate limiting, request ids or logging.
import { readFileSync } from 'node:fs';
import express from 'express';

const bodies = JSON.parse(readFileSync(process.env.BARE_BODIES!, 'utf8')) as { backup: { data: unknown }; ipInfo: { data: unknown } };
const app = express();
app.disable('x-powered-by');
app.set('etag', false);
const meta = () => ({ request_id: 'req_01M7Y6XQR1GX5YEV91CWEKDKP0', timestamp: new Date().toISOString() });
app.get('/api/v1/backup/:id', (_req, res) => {
  res.json({ success: true, data: bodies.backup.data, meta: meta() });
});
app.get('/api/tools/ip-info', (_req, res) => {
  res.json({ success: true, data: bodies.ipInfo.data, meta: meta() });
});
app.listen(Number(process.env.PORT), '127.0.0.1');

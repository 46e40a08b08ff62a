/*
 * Dredd hooks for both API documents, against the real server or the mock
 * (CONTRACT_TARGET=real|mock).
 *
 * Dredd builds one transaction per documented response of each operation, using the first
 * example of the request. With OpenAPI 3 it does NOT skip non-2xx transactions (apiaryio/dredd
 * #1257), so each non-2xx one is either turned into a request that provokes exactly that
 * response, or skipped with a reason.
 *  - real: a token from POST /auth/token, a completed backup (its id replaces the example ids),
 *    a cancelled backup (for BACKUP_NOT_COMPLETED), a pre-subscribed address (for the 200
 *    "already subscribed" answer), the loopback website for check-site.
 *  - mock: Prism chooses the response by `Prefer: code=<status>`, so every documented response
 *    is reached and its example is checked against its own schema.
 * Dredd's OpenAPI 3 reader gives Gavel no body schema (only the example, so just the keys are
 * compared); each transaction therefore gets the response schema of the 3.1 document
 * (CONTRACT_DOC) as `expected.bodySchema`, turned into a self-contained draft-07 schema.
 * Every transaction is written as one JSON line to CONTRACT_RESULTS for the coverage table.
 */
const hooks = require('hooks');
const fs = require('node:fs');
const path = require('node:path');

const env = process.env;
const TARGET = env.CONTRACT_TARGET || 'real';
const BASE = env.CONTRACT_BACKUP_BASE; // e.g. http://127.0.0.1:1234/api/v1 (fixtures are made here)
const RESULTS = env.CONTRACT_RESULTS;
const ROOT = env.CONTRACT_ALLOWED_ROOT || '/tmp';
const SOURCE = env.CONTRACT_SOURCE || '/tmp';
// A source whose backup runs until cancelled (a 256 GiB sparse file).
const BIG = env.CONTRACT_BIG_SOURCE || SOURCE;
const SITE = env.CONTRACT_SITE || 'http://127.0.0.1:9';
const RUN = Date.now().toString(36);

// Well-formed (bkp_/rst_ + 26 Crockford base32) but never issued.
const MISSING_BACKUP = 'bkp_01JZZZZZZZZZZZZZZZZZZZZZZZ';
const MISSING_RESTORE = 'rst_01JZZZZZZZZZZZZZZZZZZZZZZZ';
const MISSING_MAINTENANCE = 'mnt_01JZZZZZZZZZZZZZZZZZZZZZZZ';
const LIST_OPS = new Set(['GET /backup', 'GET /files']);
// Limited per client address: a 429 is provoked by spending the limit of one address (the
// server trusts the loopback X-Forwarded-For, and every transaction has its own address).
const ADDRESS_LIMITED = new Set(['POST /auth/token', 'POST /api/tools/check-site', 'GET /api/tools/ip-info', 'POST /api/newsletter/subscribe', 'POST /api/contacts/{type}']);
let clients = 0;
function nextClient() {
  clients++;
  return `198.18.${Math.floor(clients / 250)}.${(clients % 250) + 1}`;
}
const PUBLIC_OPS = new Set(['POST /auth/token', 'GET /status']);

const { bodySchema, requiredHeaders } = require('./schema.cjs');

const state = { token: 'mock-token', backupId: undefined, restoreId: undefined, cancelledId: undefined, disposableId: undefined, maintenanceId: undefined, repeatEmail: `repeat-${RUN}@example.com` };
let counter = 0;

async function call(method, p, body, token) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(BASE + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json().catch(() => undefined);
  return { status: res.status, json };
}

async function waitJob(kind, id) {
  for (let i = 0; i < 120; i++) {
    const r = await call('GET', `/${kind}/${id}`, undefined, state.token);
    const status = r.json && r.json.data && r.json.data.status;
    if (status && !['queued', 'running'].includes(status)) return r.json.data;
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error(`${kind} ${id} did not finish`);
}

async function setUpRealFixtures() {
  const tok = await call('POST', '/auth/token', { api_key: env.CONTRACT_API_KEY, secret: env.CONTRACT_SECRET });
  if (tok.status !== 200) throw new Error(`token: ${tok.status} ${JSON.stringify(tok.json)}`);
  state.token = tok.json.data.access_token;
  const created = await call('POST', '/backup', { source: SOURCE, destination: 'local' }, state.token);
  if (created.status !== 202) throw new Error(`backup: ${created.status} ${JSON.stringify(created.json)}`);
  const job = await waitJob('backup', created.json.data.id);
  if (job.status !== 'completed') throw new Error(`fixture backup ended ${job.status}`);
  state.backupId = job.id;
  const restore = await call('POST', '/restore', { backup_id: job.id, target_path: path.join(ROOT, `restore-fixture-${RUN}`) }, state.token);
  if (restore.status !== 202) throw new Error(`restore: ${restore.status} ${JSON.stringify(restore.json)}`);
  state.restoreId = restore.json.data.id;
  await waitJob('restore', state.restoreId);
  // A second backup for DELETE /backup/{id} to delete (the first serves the other operations).
  const disposable = await call('POST', '/backup', { source: SOURCE, destination: 'local' }, state.token);
  if (disposable.status === 202) state.disposableId = (await waitJob('backup', disposable.json.data.id)).id;
  // A finished maintenance job to read (and, finished, to fail to cancel: 409 JOB_FINISHED).
  const checked = await call('POST', '/check', { destination: 'local' }, state.token);
  if (checked.status === 202) state.maintenanceId = (await waitJob('maintenance', checked.json.data.id)).id;
  // A backup cancelled before it completes, for 409 BACKUP_NOT_COMPLETED.
  const other = await call('POST', '/backup', { source: BIG, destination: 'local' }, state.token);
  if (other.status === 202) {
    const cancel = await call('POST', `/backup/${other.json.data.id}/cancel`, undefined, state.token);
    if (cancel.status === 202) state.cancelledId = other.json.data.id;
    await waitJob('backup', other.json.data.id).catch(() => undefined);
  }
}

hooks.beforeAll((transactions, done) => {
  if (TARGET !== 'real' || !BASE) return done();
  setUpRealFixtures().then(
    () => done(),
    (err) => {
      hooks.log(`fixture setup failed: ${err.stack || err}`);
      for (const t of transactions) t.fail = `fixture setup failed: ${err.message}`;
      done();
    },
  );
});

function key(t) {
  return `${t.request.method} ${t.origin.resourceName}`;
}

function setHeader(t, name, value) {
  for (const h of Object.keys(t.request.headers)) if (h.toLowerCase() === name.toLowerCase()) delete t.request.headers[h];
  if (value !== undefined) t.request.headers[name] = value;
}

function bodyOf(t) {
  try {
    return t.request.body ? JSON.parse(t.request.body) : undefined;
  } catch {
    return undefined;
  }
}

function setBody(t, value) {
  t.request.body = typeof value === 'string' ? value : JSON.stringify(value);
}

function skip(t, reason) {
  t.skip = true;
  t.skipReason = reason;
}

/** Replaces example ids and paths with the fixtures so the happy path really succeeds. */
function useFixtures(t) {
  if (state.backupId) t.fullPath = t.fullPath.replace(/bkp_[0-9A-Za-z]+/g, state.backupId);
  if (state.restoreId) t.fullPath = t.fullPath.replace(/rst_[0-9A-Za-z]+/g, state.restoreId);
  if (state.maintenanceId) t.fullPath = t.fullPath.replace(/mnt_[0-9A-Za-z]+/g, state.maintenanceId);
  if (key(t) === 'DELETE /backup/{id}' && state.disposableId) t.fullPath = t.fullPath.replace(/bkp_[0-9A-Za-z]+/g, state.disposableId);
  // A prune or check is answered once it ended, so the next one of the repository is not refused as running.
  if (key(t) === 'POST /prune' || key(t) === 'POST /check') setHeader(t, 'Prefer', 'wait=20');
  // Example cursors belong to the example data, not to this server's listings.
  t.fullPath = t.fullPath.replace(/([?&])cursor=[^&]*&?/, '$1').replace(/[?&]$/, '');
  const body = bodyOf(t);
  if (!body || typeof body !== 'object') return;
  const k = key(t);
  if (k === 'POST /auth/token') {
    body.api_key = env.CONTRACT_API_KEY;
    body.secret = env.CONTRACT_SECRET;
  }
  if (k === 'POST /backup') {
    body.source = SOURCE;
    if (body.destination !== undefined) body.destination = 'local';
  }
  if (k === 'POST /restore') {
    if (state.backupId) body.backup_id = state.backupId;
    body.target_path = path.join(ROOT, `restore-${RUN}-${++counter}`);
    delete body.paths;
  }
  if (k === 'POST /api/tools/check-site') body.url = `${SITE}/`;
  if (k === 'POST /api/newsletter/subscribe') body.email = `dredd-${RUN}-${++counter}@example.com`;
  setBody(t, body);
}

/** Sends the transaction's own request from its own address until the limit answers 429. */
async function exhaust(t) {
  const url = new URL(BASE).origin + t.fullPath;
  for (let i = 0; i < 150; i++) {
    const res = await fetch(url, { method: t.request.method, headers: t.request.headers, body: t.request.body || undefined });
    await res.arrayBuffer();
    if (res.status === 429) return;
  }
  throw new Error('no 429 after 150 requests');
}

/** Adapts a non-2xx transaction on the real server so it provokes that response. */
function provoke(t, status) {
  const k = key(t);
  const body = bodyOf(t);
  switch (status) {
    case 400:
      if (k === 'POST /api/contacts/{type}') t.fullPath = t.fullPath.replace(/\/api\/contacts\/[^/?]+/, '/api/contacts/not-a-type');
      else if (/(bkp|rst|mnt)_[0-9A-Za-z]+/.test(t.fullPath)) t.fullPath = t.fullPath.replace(/(bkp|rst|mnt)_[0-9A-Za-z]+/, '$1_malformed');
      else if (body !== undefined) setBody(t, { ...body, unexpected_property: true });
      else if (LIST_OPS.has(k)) t.fullPath += (t.fullPath.includes('?') ? '&' : '?') + 'limit=0';
      else t.fullPath += (t.fullPath.includes('?') ? '&' : '?') + 'unexpected_parameter=1';
      return;
    case 401:
      if (k === 'POST /auth/token') setBody(t, { ...body, secret: 'wrong-secret-not-the-real-one' });
      else if (PUBLIC_OPS.has(k) || k.includes('/api/')) skip(t, 'public operation: nothing to authenticate');
      else setHeader(t, 'Authorization', undefined);
      return;
    case 403:
      if (k === 'POST /backup') setBody(t, { ...body, source: '/etc' });
      else if (k === 'POST /restore') setBody(t, { ...body, target_path: '/etc/contract-tests-restore' });
      // HTTPS_REQUIRED: the trusted (loopback) proxy reports that the client used plain HTTP.
      else setHeader(t, 'X-Forwarded-Proto', 'http');
      return;
    case 404:
      if (t.fullPath.match(/bkp_[0-9A-Za-z]+/)) t.fullPath = t.fullPath.replace(/bkp_[0-9A-Za-z]+/g, MISSING_BACKUP);
      else if (t.fullPath.match(/rst_[0-9A-Za-z]+/)) t.fullPath = t.fullPath.replace(/rst_[0-9A-Za-z]+/g, MISSING_RESTORE);
      else if (t.fullPath.match(/mnt_[0-9A-Za-z]+/)) t.fullPath = t.fullPath.replace(/mnt_[0-9A-Za-z]+/g, MISSING_MAINTENANCE);
      else if (k === 'POST /restore') setBody(t, { ...body, backup_id: MISSING_BACKUP });
      else if (k === 'GET /files') t.fullPath = `${t.fullPath.split('?')[0]}?backup_id=${MISSING_BACKUP}`;
      else skip(t, 'no id to miss on this operation');
      return;
    case 405:
      t.request.method = t.request.method === 'DELETE' ? 'PUT' : 'DELETE';
      delete t.request.body;
      setBody(t, '');
      return;
    case 409:
      if (k === 'POST /backup/{id}/cancel') return; // the fixture backup is completed: JOB_FINISHED
      if (k === 'POST /maintenance/{id}/cancel') return; // the fixture check is finished: JOB_FINISHED
      if (k === 'POST /restore') {
        if (state.cancelledId) setBody(t, { ...body, backup_id: state.cancelledId });
        else skip(t, 'the backup meant to be cancelled completed first; no unfinished backup to restore from');
        return;
      }
      if (k === 'GET /files') {
        if (state.cancelledId) t.fullPath = `${t.fullPath.split('?')[0]}?backup_id=${state.cancelledId}`;
        else skip(t, 'the backup meant to be cancelled completed first; no unfinished backup to list');
        return;
      }
      skip(t, 'no conflict to provoke on this operation');
      return;
    case 413:
      if (body === undefined) return skip(t, 'operation has no body');
      setBody(t, { ...body, padding: 'x'.repeat(70 * 1024) });
      return;
    case 415:
      if (body === undefined) return skip(t, 'operation has no body');
      setHeader(t, 'Content-Type', 'text/plain');
      return;
    case 422:
      if (k === 'POST /backup') setBody(t, { ...body, source: path.join(ROOT, 'does-not-exist') });
      else if (k === 'POST /restore') setBody(t, { ...body, target_path: path.join(SOURCE, 'hello.txt') });
      else if (k === 'POST /api/tools/check-site') setBody(t, { url: 'http://169.254.169.254/latest/meta-data/' });
      else skip(t, 'no unprocessable input known for this operation');
      return;
    case 429:
      if (ADDRESS_LIMITED.has(k)) t.exhaustLimit = true;
      else skip(t, 'the account limit of this server (business plan, 10000/h) is not worth spending here; the Prism-proxy flows exhaust a free_trial account');
      return;
    case 500:
    case 503:
      return skip(t, `${status} cannot be provoked from outside a healthy server`);
    default:
      return skip(t, `no recipe for ${status}`);
  }
}

hooks.beforeEach((t, done) => {
  t.contractMethod = t.request.method;
  const status = Number(t.expected.statusCode);
  const schema = bodySchema(t.request.method, t.origin.resourceName, status);
  if (schema) t.expected.bodySchema = schema;
  // Dredd expects every documented header, optional ones too (Preference-Applied is only sent
  // when asked for), and compares Content-Type byte for byte ("; charset=utf-8" fails it):
  // keep the required headers; the media type is checked by the body schema and the Prism proxy.
  const required = requiredHeaders(t.request.method, t.origin.resourceName, status);
  if (required) {
    for (const h of Object.keys(t.expected.headers || {})) if (!required.includes(h.toLowerCase())) delete t.expected.headers[h];
  }
  const k = key(t);
  const needsAuth = !PUBLIC_OPS.has(k) && !k.includes(' /api/');
  if (needsAuth) setHeader(t, 'Authorization', `Bearer ${state.token}`);
  setHeader(t, 'X-Request-Id', `dredd-${RUN}-${++counter}`);
  setHeader(t, 'X-Forwarded-For', nextClient());
  if (TARGET === 'mock') {
    // Prism picks the documented response by code; the request itself stays the example.
    setHeader(t, 'Prefer', `code=${status}`);
    return done();
  }
  useFixtures(t);
  if (status >= 300) provoke(t, status);
  if (t.exhaustLimit) {
    exhaust(t).then(
      () => done(),
      (err) => {
        t.fail = `could not spend the rate limit: ${err.message}`;
        done();
      },
    );
    return;
  }
  if (k === 'POST /maintenance/{id}/cancel' && status === 202) {
    skip(t, 'a check of the small fixture repository ends before a cancel can reach it (the API tests cancel nothing here either)');
    return done();
  }
  if (k === 'POST /backup/{id}/cancel' && status === 202) {
    // A fresh backup of the big source, still running when the cancel arrives.
    call('POST', '/backup', { source: BIG, destination: 'local' }, state.token).then(
      (r) => {
        if (r.status === 202) t.fullPath = t.fullPath.replace(/bkp_[0-9A-Za-z]+/, r.json.data.id);
        else t.fail = `could not start a backup to cancel: ${r.status}`;
        done();
      },
      (err) => {
        t.fail = `could not start a backup to cancel: ${err.message}`;
        done();
      },
    );
    return;
  }
  if (k === 'POST /api/newsletter/subscribe' && status === 200) {
    // Subscribe once first so this transaction meets an existing subscriber.
    setBody(t, { ...bodyOf(t), email: state.repeatEmail });
    fetch(new URL('/api/newsletter/subscribe', BASE).href, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: t.request.body }).then(
      () => done(),
      (err) => {
        t.fail = `pre-subscription failed: ${err.message}`;
        done();
      },
    );
    return;
  }
  done();
});

/** Gavel's findings, one short string per invalid field. */
function problems(t) {
  const fields = (t.results && t.results.fields) || {};
  const out = [];
  for (const [name, field] of Object.entries(fields)) {
    if (field && field.valid === false) out.push(`${name}: ${(field.errors || []).map((e) => e.message).join('; ')}`);
  }
  return out.length ? out.join(' | ').slice(0, 800) : undefined;
}

hooks.afterEach((t, done) => {
  if (RESULTS) {
    const line = {
      name: t.name,
      method: t.contractMethod || t.request.method,
      path: t.origin.resourceName,
      expected: Number(t.expected.statusCode),
      actual: t.real ? t.real.statusCode : undefined,
      skipped: Boolean(t.skip),
      skipReason: t.skipReason,
      result: t.test ? t.test.status : undefined,
      errors: problems(t),
    };
    fs.appendFileSync(RESULTS, JSON.stringify(line) + '\n');
  }
  done();
});

/**
 * The Backup API's state in the mock: tokens it minted, the jobs of each account and their file
 * listings. Handlers return undefined for what they leave to the examples.
 */
import { MockApiError, newId, successResponse, type MockResponse } from './answers.ts';
import { endOf, isFinal, presentJob, statusAt, timeline, type FileEntry, type JobKind, type MockJob } from './jobs.ts';
import type { Routes } from './routes.ts';
import type { Account, Handler, MockCall, MockOptions } from './types.ts';

interface IssuedToken {
  account: Account;
  expiresAt: number;
}

const MAX_WAIT_SECONDS = 30;

/** The `wait` of a Prefer header, capped as the server caps it; null when absent. */
export function preferWait(prefer: string | null): number | null {
  for (const part of (prefer ?? '').split(',')) {
    const m = /^\s*wait\s*=\s*"?(\d{1,9})"?\s*(;.*)?$/i.exec(part);
    if (m) return Math.min(Number(m[1]), MAX_WAIT_SECONDS);
  }
  return null;
}

/**
 * Resolves once Date.now() has reached `until`. Jobs are timed on Date.now(), timers on the
 * monotonic clock: under load a timer ended before Date.now() reached its end, and a job waited
 * for showed as still running.
 */
async function sleepUntil(until: number): Promise<void> {
  while (Date.now() < until) await new Promise((resolve) => setTimeout(resolve, until - Date.now()));
}

const base64url = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Whether `path` lies inside one of `roots` (lexically: the mock has no file system to resolve links in). */
function inside(path: string, roots: readonly string[]): boolean {
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '..') parts.pop();
    else if (part !== '' && part !== '.') parts.push(part);
  }
  const normal = `/${parts.join('/')}`;
  return roots.some((root) => {
    const r = root.replace(/\/+$/, '');
    return normal === (r || '/') || normal.startsWith(`${r}/`);
  });
}

const matches = (entry: FileEntry, prefix: string): boolean => entry.path === prefix || entry.path.startsWith(prefix.replace(/\/+$/, '') + '/');

export class BackupState {
  readonly #options: Required<Pick<MockOptions, 'jobSeconds' | 'tokenSeconds' | 'plan' | 'destinations'>> & MockOptions;
  readonly #tokens = new Map<string, IssuedToken>();
  readonly #jobs = new Map<string, MockJob>();
  readonly #routes: Routes;

  constructor(options: MockOptions, routes: Routes) {
    this.#options = { jobSeconds: 5, tokenSeconds: 900, plan: 'pro', destinations: ['cloud', 'local'], ...options };
    this.#routes = routes;
  }

  #present(job: MockJob, now = Date.now()): Record<string, unknown> {
    return presentJob(job, this.#routes.template('backup', job.kind === 'backup' ? 'getBackup' : 'getRestore'), now);
  }

  reset(): void {
    this.#tokens.clear();
    this.#jobs.clear();
  }

  /** The account of a bearer token the mock minted; throws the 401 the server would answer. */
  authenticate(authorization: string | null, now = Date.now()): Account {
    const challenge = 'Bearer realm="backup-api"';
    const match = authorization ? /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)[ ]*$/i.exec(authorization) : null;
    if (!match) {
      const message = authorization ? 'The Authorization header must use the Bearer scheme.' : 'A bearer token is required.';
      throw new MockApiError('UNAUTHORIZED', message, {}, { 'WWW-Authenticate': challenge });
    }
    const issued = this.#tokens.get(match[1]!);
    if (!issued) throw new MockApiError('UNAUTHORIZED', 'The access token is not valid.', {}, { 'WWW-Authenticate': challenge });
    if (issued.expiresAt <= now) {
      const expired = `${challenge}, error="invalid_token", error_description="token expired"`;
      throw new MockApiError('TOKEN_EXPIRED', 'The access token has expired.', {}, { 'WWW-Authenticate': expired });
    }
    return issued.account;
  }

  /** Counts for GET /status. */
  jobCounts(now = Date.now()): { queued: number; running: number } {
    const counts = { queued: 0, running: 0 };
    for (const job of this.#jobs.values()) {
      const status = statusAt(job, now);
      if (status === 'queued' || status === 'running') counts[status] += 1;
    }
    return counts;
  }

  readonly handlers: Record<string, Handler> = {
    createToken: (call) => this.#createToken(call),
    createBackup: (call) => this.#createJob('backup', call),
    createRestore: (call) => this.#createJob('restore', call),
    getBackup: (call) => successResponse(200, this.#present(this.#job('backup', call))),
    getRestore: (call) => successResponse(200, this.#present(this.#job('restore', call))),
    cancelBackup: (call) => this.#cancel(call),
    listBackups: (call) => this.#listBackups(call),
    listFiles: (call) => this.#listFiles(call),
  };

  #createToken(call: MockCall): MockResponse {
    const { api_key: apiKey, secret } = call.body as { api_key: string; secret: string };
    const known = this.#options.credentials;
    const match = known === undefined ? { apiKey, secret, plan: this.#options.plan } : known.find((c) => c.apiKey === apiKey && c.secret === secret);
    if (!match) throw new MockApiError('INVALID_CREDENTIALS', 'The API key or secret is not valid.');
    const now = Date.now();
    const expiresAt = now + this.#options.tokenSeconds * 1000;
    const claims = { sub: `acc_${apiKey}`, iat: Math.floor(now / 1000), exp: Math.floor(expiresAt / 1000), jti: newId('tok') };
    const random = base64url(crypto.getRandomValues(new Uint8Array(32)));
    const token = `${base64url(utf8(JSON.stringify({ alg: 'HS256', typ: 'JWT' })))}.${base64url(utf8(JSON.stringify(claims)))}.${random}`;
    this.#tokens.set(token, { account: { id: claims.sub, plan: match.plan ?? this.#options.plan }, expiresAt });
    return successResponse(200, { access_token: token, token_type: 'Bearer', expires_in: this.#options.tokenSeconds, expires_at: new Date(expiresAt).toISOString() });
  }

  #job(kind: JobKind, call: MockCall, id = call.route.params.id ?? ''): MockJob {
    const job = this.#jobs.get(id);
    if (job?.kind === kind && job.account === call.account!.id) return job;
    throw kind === 'backup'
      ? new MockApiError('BACKUP_NOT_FOUND', 'No backup with this id exists in your account.', { backup_id: id })
      : new MockApiError('RESTORE_NOT_FOUND', 'No restore with this id exists in your account.', { restore_id: id });
  }

  /** The files a completed backup lists: the entries of the spec's file-list example. */
  #listing(): FileEntry[] {
    return (this.#routes.template('backup', 'listFiles').items as FileEntry[] | undefined) ?? [];
  }

  #completedBackup(call: MockCall, id: string): MockJob {
    const backup = this.#job('backup', call, id);
    const status = statusAt(backup, Date.now());
    if (status !== 'completed') {
      throw new MockApiError('BACKUP_NOT_COMPLETED', `This backup is ${status}; only completed backups can be restored or listed.`, { status });
    }
    return backup;
  }

  async #createJob(kind: JobKind, call: MockCall): Promise<MockResponse> {
    const request = call.body as Record<string, unknown>;
    const roots = this.#options.allowedRoots;
    let entries: FileEntry[];
    if (kind === 'backup') {
      if (roots && !inside(String(request.source), roots)) throw new MockApiError('SOURCE_NOT_ALLOWED', 'The source is outside the allowed backup roots.');
      const destination = String(request.destination);
      if (!this.#options.destinations.includes(destination)) {
        throw new MockApiError('DESTINATION_UNAVAILABLE', `No repository named ${destination} is configured.`, { destination });
      }
      entries = this.#listing();
    } else {
      const backup = this.#completedBackup(call, String(request.backup_id));
      if (roots && !inside(String(request.target_path), roots)) throw new MockApiError('TARGET_NOT_ALLOWED', 'The target is outside the allowed restore roots.');
      const paths = (request.paths as string[] | undefined) ?? null;
      for (const p of paths ?? []) {
        if (!backup.entries.some((e) => matches(e, p))) throw new MockApiError('INVALID_SOURCE', 'An entry of paths matches nothing in the backup.', { path: p });
      }
      entries = paths === null ? backup.entries : backup.entries.filter((e) => paths.some((p) => matches(e, p)));
    }
    const job: MockJob = { kind, id: newId(kind === 'backup' ? 'bkp' : 'rst'), account: call.account!.id, request, entries, ...timeline(Date.now(), this.#options.jobSeconds) };
    this.#jobs.set(job.id, job);
    const wait = preferWait(call.prefer);
    if (wait !== null && wait > 0) await sleepUntil(Math.min(endOf(job), Date.now() + wait * 1000));
    return successResponse(202, this.#present(job), {
      Location: `${call.basePath}/${kind}/${job.id}`,
      ...(wait !== null ? { 'Preference-Applied': `wait=${wait}` } : {}),
    });
  }

  #cancel(call: MockCall): MockResponse {
    const job = this.#job('backup', call);
    const now = Date.now();
    const status = statusAt(job, now);
    if (isFinal(status)) throw new MockApiError('JOB_FINISHED', `The backup already ended: it is ${status}.`, { status });
    job.cancelledAt = now;
    return successResponse(202, this.#present(job, now));
  }

  #mine(kind: JobKind, account: string): MockJob[] {
    return [...this.#jobs.values()].filter((j) => j.kind === kind && j.account === account).sort((a, b) => (a.id < b.id ? 1 : -1));
  }

  #listBackups(call: MockCall): MockResponse {
    const limit = Number(call.query.get('limit'));
    const status = call.query.get('status');
    const jobs = this.#mine('backup', call.account!.id).filter((j) => status === null || statusAt(j, Date.now()) === status);
    const { page, next } = paginate(jobs, call.query.get('cursor'), limit, (j) => j.id);
    return successResponse(200, { items: page.map((j) => this.#present(j)), next_cursor: next });
  }

  #listFiles(call: MockCall): MockResponse {
    const id = call.query.get('backup_id');
    let backup: MockJob | undefined;
    if (id !== null) backup = this.#completedBackup(call, id);
    else {
      backup = this.#mine('backup', call.account!.id).find((j) => statusAt(j, Date.now()) === 'completed');
      if (!backup) throw new MockApiError('BACKUP_NOT_FOUND', 'Your account has no completed backup yet.');
    }
    const prefix = call.query.get('prefix');
    const entries = prefix ? backup.entries.filter((e) => e.path.startsWith(prefix)) : backup.entries;
    const { page, next } = paginate(entries, call.query.get('cursor'), Number(call.query.get('limit')), (e) => e.path);
    return successResponse(200, { backup_id: backup.id, items: page, next_cursor: next });
  }
}

/** Keyset paging over an ordered list: the cursor names the last key of the previous page. */
function paginate<T>(items: T[], cursor: string | null, limit: number, key: (item: T) => string): { page: T[]; next: string | null } {
  let start = 0;
  if (cursor !== null) {
    let after: string | undefined;
    try {
      const binary = atob(cursor.replace(/-/g, '+').replace(/_/g, '/'));
      after = new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
    } catch {
      after = undefined;
    }
    start = after === undefined ? 0 : items.findIndex((item) => key(item) === after) + 1;
    if (start === 0) throw new MockApiError('VALIDATION_ERROR', 'The request is not valid.', { errors: [{ path: '/query/cursor', message: 'is not a cursor of this listing' }] });
  }
  const page = items.slice(start, start + limit);
  const more = start + limit < items.length;
  return { page, next: more ? base64url(utf8(key(page[page.length - 1]!))) : null };
}


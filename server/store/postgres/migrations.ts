import type pg from 'pg';
import { translate } from './errors.ts';
import { lockKey } from './executor.ts';

/**
 * PostgreSQL schema migrations, applied in order once each; never edit a shipped entry, append a
 * new one. The same tables as the SQLite schema after its migrations, in PostgreSQL's types.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE accounts (
    id          text PRIMARY KEY,
    plan        text NOT NULL CHECK (plan IN ('free_trial', 'pro', 'business')),
    created_at  timestamptz NOT NULL
  );

  CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    account_id   text NOT NULL REFERENCES accounts(id),
    secret_hash  text NOT NULL,
    label        text,
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz
  );
  CREATE INDEX api_keys_account ON api_keys(account_id);

  CREATE TABLE jobs (
    id                text PRIMARY KEY,
    kind              text NOT NULL,
    account_id        text NOT NULL REFERENCES accounts(id),
    repository        text NOT NULL,
    status            text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
    created_at        timestamptz NOT NULL,
    started_at        timestamptz,
    finished_at       timestamptz,
    files_done        bigint NOT NULL DEFAULT 0,
    files_total       bigint NOT NULL DEFAULT 0,
    bytes_done        bigint NOT NULL DEFAULT 0,
    bytes_total       bigint NOT NULL DEFAULT 0,
    error_code        text,
    error_message     text,
    warnings_count    bigint NOT NULL DEFAULT 0,
    warnings          text NOT NULL DEFAULT '[]',
    owner             text,
    lease_expires_at  bigint,
    cancel_requested  integer NOT NULL DEFAULT 0
  );
  CREATE INDEX jobs_account ON jobs(account_id, kind, id);
  CREATE INDEX jobs_account_status ON jobs(account_id, status);
  CREATE INDEX jobs_account_started ON jobs(account_id, started_at);
  CREATE INDEX jobs_queue ON jobs(status, repository, created_at);

  CREATE TABLE backups (
    id               text PRIMARY KEY REFERENCES jobs(id),
    source           text NOT NULL,
    destination      text NOT NULL,
    compression      text NOT NULL,
    encryption       integer NOT NULL,
    deduplication    integer NOT NULL,
    files_backed_up  bigint NOT NULL DEFAULT 0,
    size_bytes       bigint NOT NULL DEFAULT 0,
    stored_bytes     bigint NOT NULL DEFAULT 0,
    snapshot_id      text
  );

  CREATE TABLE restores (
    id               text PRIMARY KEY REFERENCES jobs(id),
    backup_id        text NOT NULL REFERENCES backups(id),
    target_path      text NOT NULL,
    paths            text,
    overwrite        text NOT NULL,
    files_restored   bigint NOT NULL DEFAULT 0,
    files_skipped    bigint NOT NULL DEFAULT 0,
    size_bytes       bigint NOT NULL DEFAULT 0
  );

  -- path_head: the first 2048 bytes of path. A btree entry holds at most about 2.7 kB, and
  -- paths can be longer; ordering by (path_head, path) is byte order of path.
  CREATE TABLE backup_entries (
    backup_id    text NOT NULL REFERENCES backups(id) ON DELETE CASCADE,
    seq          bigint NOT NULL,
    path         bytea NOT NULL,
    path_head    bytea GENERATED ALWAYS AS (substring(path from 1 for 2048)) STORED,
    type         text NOT NULL CHECK (type IN ('file', 'directory', 'symlink')),
    size_bytes   bigint NOT NULL,
    mode         integer NOT NULL,
    modified_at  timestamptz NOT NULL,
    sha256       text,
    link_target  bytea,
    PRIMARY KEY (backup_id, seq)
  );
  CREATE INDEX backup_entries_path ON backup_entries(backup_id, path_head);

  CREATE TABLE newsletter_subscribers (
    email          text PRIMARY KEY,
    source         text NOT NULL,
    status         text NOT NULL,
    subscribed_at  timestamptz NOT NULL
  );

  CREATE TABLE contact_messages (
    id           text PRIMARY KEY,
    type         text NOT NULL,
    name         text NOT NULL,
    email        text NOT NULL,
    subject      text NOT NULL,
    message      text NOT NULL,
    client_ip    text,
    received_at  timestamptz NOT NULL
  );

  CREATE TABLE repository_keys (
    account_id   text NOT NULL REFERENCES accounts(id),
    destination  text NOT NULL,
    wrapped      bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (account_id, destination)
  );

  CREATE TABLE secret_fingerprints (
    name         text PRIMARY KEY,
    fingerprint  text NOT NULL,
    recorded_at  timestamptz NOT NULL
  );
  `,
  // 1.1: maintenance jobs (prune, check) with their result; deleted backups are kept as rows
  // (restores refer to them) but appear nowhere.
  `
  ALTER TABLE backups ADD COLUMN deleted_at timestamptz;

  CREATE TABLE maintenance (
    id                text PRIMARY KEY REFERENCES jobs(id),
    operation         text NOT NULL CHECK (operation IN ('prune', 'check')),
    destination       text NOT NULL,
    trigger           text NOT NULL CHECK (trigger IN ('request', 'schedule')),
    dry_run           integer NOT NULL DEFAULT 0,
    read_data         integer NOT NULL DEFAULT 0,
    read_data_subset  text,
    phase             text,
    result            text
  );
  `,
  // 1.2: a counter every change to a key or an account moves (by trigger, whoever writes), so that
  // a server caching keys learns of a revocation by reading one row.
  `
  CREATE TABLE key_epoch (
    id       integer PRIMARY KEY CHECK (id = 1),
    version  bigint NOT NULL
  );
  INSERT INTO key_epoch (id, version) VALUES (1, 0);
  CREATE FUNCTION bump_key_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE key_epoch SET version = version + 1 WHERE id = 1;
    RETURN NULL;
  END
  $$;
  CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION bump_key_epoch();
  CREATE TRIGGER accounts_changed AFTER UPDATE OR DELETE ON accounts FOR EACH STATEMENT EXECUTE FUNCTION bump_key_epoch();
  `,
  // 1.3: a counter every change to a finished job moves (by trigger, whoever writes), so that a
  // server caching finished jobs learns of a deletion by reading one row. Jobs still queued or
  // running change without moving it (they are never cached).
  `
  CREATE TABLE job_epoch (
    id       integer PRIMARY KEY CHECK (id = 1),
    version  bigint NOT NULL
  );
  INSERT INTO job_epoch (id, version) VALUES (1, 0);
  CREATE FUNCTION bump_job_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE job_epoch SET version = version + 1 WHERE id = 1;
    RETURN NULL;
  END
  $$;
  CREATE TRIGGER jobs_final_updated AFTER UPDATE ON jobs FOR EACH ROW WHEN (OLD.status IN ('completed', 'failed', 'cancelled')) EXECUTE FUNCTION bump_job_epoch();
  CREATE TRIGGER jobs_deleted AFTER DELETE ON jobs FOR EACH STATEMENT EXECUTE FUNCTION bump_job_epoch();
  CREATE TRIGGER backups_changed AFTER UPDATE OR DELETE ON backups FOR EACH STATEMENT EXECUTE FUNCTION bump_job_epoch();
  CREATE TRIGGER restores_changed AFTER UPDATE OR DELETE ON restores FOR EACH STATEMENT EXECUTE FUNCTION bump_job_epoch();
  CREATE TRIGGER maintenance_changed AFTER UPDATE OR DELETE ON maintenance FOR EACH STATEMENT EXECUTE FUNCTION bump_job_epoch();
  `,
];

/**
 * Applies pending migrations under a session advisory lock, so instances starting together
 * apply each once: the others wait, then find nothing left to do.
 */
export async function migrate(pool: pg.Pool): Promise<void> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    throw translate(err);
  }
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [lockKey('schema-migrations')]);
    try {
      await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)');
      const { rows } = await client.query<{ v: number }>('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations');
      for (const [index, sql] of MIGRATIONS.entries()) {
        const version = index + 1;
        if (version <= rows[0]!.v) continue;
        await client.query('BEGIN');
        try {
          await client.query(sql);
          await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, now())', [version]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw err;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [lockKey('schema-migrations')]);
    }
  } catch (err) {
    throw translate(err);
  } finally {
    client.release();
  }
}

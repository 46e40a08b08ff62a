/** Schema migrations, applied in order once each; never edit a shipped entry, append a new one. */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE accounts (
    id          TEXT PRIMARY KEY,
    plan        TEXT NOT NULL CHECK (plan IN ('free_trial', 'pro', 'business')),
    created_at  TEXT NOT NULL
  );

  CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts(id),
    secret_hash  TEXT NOT NULL,
    label        TEXT,
    created_at   TEXT NOT NULL,
    revoked_at   TEXT
  );
  CREATE INDEX api_keys_account ON api_keys(account_id);

  CREATE TABLE backup_jobs (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts(id),
    status            TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
    source            TEXT NOT NULL,
    destination       TEXT NOT NULL,
    compression       TEXT NOT NULL,
    encryption        INTEGER NOT NULL,
    deduplication     INTEGER NOT NULL,
    created_at        TEXT NOT NULL,
    started_at        TEXT,
    finished_at       TEXT,
    files_backed_up   INTEGER NOT NULL DEFAULT 0,
    size_bytes        INTEGER NOT NULL DEFAULT 0,
    stored_bytes      INTEGER NOT NULL DEFAULT 0,
    files_done        INTEGER NOT NULL DEFAULT 0,
    files_total       INTEGER NOT NULL DEFAULT 0,
    bytes_done        INTEGER NOT NULL DEFAULT 0,
    bytes_total       INTEGER NOT NULL DEFAULT 0,
    snapshot_id       TEXT,
    error_code        TEXT,
    error_message     TEXT
  );
  CREATE INDEX backup_jobs_account ON backup_jobs(account_id, id);
  CREATE INDEX backup_jobs_status ON backup_jobs(status);

  CREATE TABLE restore_jobs (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts(id),
    backup_id         TEXT NOT NULL REFERENCES backup_jobs(id),
    status            TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
    target_path       TEXT NOT NULL,
    paths             TEXT,
    overwrite         TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    started_at        TEXT,
    finished_at       TEXT,
    files_restored    INTEGER NOT NULL DEFAULT 0,
    files_skipped     INTEGER NOT NULL DEFAULT 0,
    size_bytes        INTEGER NOT NULL DEFAULT 0,
    files_done        INTEGER NOT NULL DEFAULT 0,
    files_total       INTEGER NOT NULL DEFAULT 0,
    bytes_done        INTEGER NOT NULL DEFAULT 0,
    bytes_total       INTEGER NOT NULL DEFAULT 0,
    error_code        TEXT,
    error_message     TEXT
  );
  CREATE INDEX restore_jobs_account ON restore_jobs(account_id, id);
  CREATE INDEX restore_jobs_status ON restore_jobs(status);

  CREATE TABLE backup_files (
    backup_id    TEXT NOT NULL REFERENCES backup_jobs(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    path         TEXT NOT NULL,
    type         TEXT NOT NULL CHECK (type IN ('file', 'directory', 'symlink')),
    size_bytes   INTEGER NOT NULL,
    mode         INTEGER NOT NULL,
    modified_at  TEXT NOT NULL,
    sha256       TEXT,
    link_target  TEXT,
    PRIMARY KEY (backup_id, path)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX backup_files_seq ON backup_files(backup_id, seq);

  CREATE TABLE newsletter_subscribers (
    email          TEXT PRIMARY KEY,
    source         TEXT NOT NULL,
    status         TEXT NOT NULL,
    subscribed_at  TEXT NOT NULL
  );

  CREATE TABLE contact_messages (
    id           TEXT PRIMARY KEY,
    type         TEXT NOT NULL,
    name         TEXT NOT NULL,
    email        TEXT NOT NULL,
    subject      TEXT NOT NULL,
    message      TEXT NOT NULL,
    client_ip    TEXT,
    received_at  TEXT NOT NULL
  );
  `,
  `
  ALTER TABLE backup_jobs ADD COLUMN warnings TEXT;
  ALTER TABLE restore_jobs ADD COLUMN warnings TEXT;
  `,
];

/**
 * SQLite schema migrations, applied in order once each; never edit a shipped entry, append a new
 * one. The PostgreSQL schema (store/postgres/migrations.ts) is the same tables in its types.
 */
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
  // 1.1: one jobs table for every kind (the queue claims across kinds) with leases; listings
  // with byte paths, appended while a backup runs; repository keys and secret fingerprints.
  `
  CREATE TABLE jobs (
    id                TEXT PRIMARY KEY,
    kind              TEXT NOT NULL,
    account_id        TEXT NOT NULL REFERENCES accounts(id),
    repository        TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
    created_at        TEXT NOT NULL,
    started_at        TEXT,
    finished_at       TEXT,
    files_done        INTEGER NOT NULL DEFAULT 0,
    files_total       INTEGER NOT NULL DEFAULT 0,
    bytes_done        INTEGER NOT NULL DEFAULT 0,
    bytes_total       INTEGER NOT NULL DEFAULT 0,
    error_code        TEXT,
    error_message     TEXT,
    warnings_count    INTEGER NOT NULL DEFAULT 0,
    warnings          TEXT NOT NULL DEFAULT '[]',
    owner             TEXT,
    lease_expires_at  INTEGER,
    cancel_requested  INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX jobs_account ON jobs(account_id, kind, id);
  CREATE INDEX jobs_account_status ON jobs(account_id, status);
  CREATE INDEX jobs_account_started ON jobs(account_id, started_at);
  CREATE INDEX jobs_queue ON jobs(status, repository, created_at);

  CREATE TABLE backups (
    id               TEXT PRIMARY KEY REFERENCES jobs(id),
    source           TEXT NOT NULL,
    destination      TEXT NOT NULL,
    compression      TEXT NOT NULL,
    encryption       INTEGER NOT NULL,
    deduplication    INTEGER NOT NULL,
    files_backed_up  INTEGER NOT NULL DEFAULT 0,
    size_bytes       INTEGER NOT NULL DEFAULT 0,
    stored_bytes     INTEGER NOT NULL DEFAULT 0,
    snapshot_id      TEXT
  );

  CREATE TABLE restores (
    id               TEXT PRIMARY KEY REFERENCES jobs(id),
    backup_id        TEXT NOT NULL REFERENCES backups(id),
    target_path      TEXT NOT NULL,
    paths            TEXT,
    overwrite        TEXT NOT NULL,
    files_restored   INTEGER NOT NULL DEFAULT 0,
    files_skipped    INTEGER NOT NULL DEFAULT 0,
    size_bytes       INTEGER NOT NULL DEFAULT 0
  );

  -- path_head: the first 2048 bytes of path; PostgreSQL cannot index longer keys, and both
  -- databases order by (path_head, path), which is byte order of path.
  CREATE TABLE backup_entries (
    backup_id    TEXT NOT NULL REFERENCES backups(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    path         BLOB NOT NULL,
    path_head    BLOB GENERATED ALWAYS AS (substr(path, 1, 2048)) STORED,
    type         TEXT NOT NULL CHECK (type IN ('file', 'directory', 'symlink')),
    size_bytes   INTEGER NOT NULL,
    mode         INTEGER NOT NULL,
    modified_at  TEXT NOT NULL,
    sha256       TEXT,
    link_target  BLOB,
    PRIMARY KEY (backup_id, seq)
  ) WITHOUT ROWID;
  CREATE INDEX backup_entries_path ON backup_entries(backup_id, path_head, path);

  INSERT INTO jobs (id, kind, account_id, repository, status, created_at, started_at, finished_at,
      files_done, files_total, bytes_done, bytes_total, error_code, error_message)
    SELECT id, 'backup', account_id, account_id || '/' || destination, status, created_at, started_at, finished_at,
      files_done, files_total, bytes_done, bytes_total, error_code, error_message FROM backup_jobs;
  INSERT INTO backups (id, source, destination, compression, encryption, deduplication, files_backed_up, size_bytes, stored_bytes, snapshot_id)
    SELECT id, source, destination, compression, encryption, deduplication, files_backed_up, size_bytes, stored_bytes, snapshot_id FROM backup_jobs;
  INSERT INTO jobs (id, kind, account_id, repository, status, created_at, started_at, finished_at,
      files_done, files_total, bytes_done, bytes_total, error_code, error_message)
    SELECT r.id, 'restore', r.account_id, r.account_id || '/' || b.destination, r.status, r.created_at, r.started_at, r.finished_at,
      r.files_done, r.files_total, r.bytes_done, r.bytes_total, r.error_code, r.error_message
    FROM restore_jobs r JOIN backup_jobs b ON b.id = r.backup_id;
  INSERT INTO restores (id, backup_id, target_path, paths, overwrite, files_restored, files_skipped, size_bytes)
    SELECT id, backup_id, target_path, paths, overwrite, files_restored, files_skipped, size_bytes FROM restore_jobs;
  INSERT INTO backup_entries (backup_id, seq, path, type, size_bytes, mode, modified_at, sha256, link_target)
    SELECT backup_id, seq, CAST(path AS BLOB), type, size_bytes, mode, modified_at, sha256, CAST(link_target AS BLOB) FROM backup_files;
  DROP TABLE backup_files;
  DROP TABLE restore_jobs;
  DROP TABLE backup_jobs;

  CREATE TABLE repository_keys (
    account_id   TEXT NOT NULL REFERENCES accounts(id),
    destination  TEXT NOT NULL,
    wrapped      BLOB NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (account_id, destination)
  );

  CREATE TABLE secret_fingerprints (
    name         TEXT PRIMARY KEY,
    fingerprint  TEXT NOT NULL,
    recorded_at  TEXT NOT NULL
  );
  `,
  // 1.1: maintenance jobs (prune, check) with their result; deleted backups are kept as rows
  // (restores refer to them) but appear nowhere.
  `
  ALTER TABLE backups ADD COLUMN deleted_at TEXT;

  CREATE TABLE maintenance (
    id                TEXT PRIMARY KEY REFERENCES jobs(id),
    operation         TEXT NOT NULL CHECK (operation IN ('prune', 'check')),
    destination       TEXT NOT NULL,
    trigger           TEXT NOT NULL CHECK (trigger IN ('request', 'schedule')),
    dry_run           INTEGER NOT NULL DEFAULT 0,
    read_data         INTEGER NOT NULL DEFAULT 0,
    read_data_subset  TEXT,
    phase             TEXT,
    result            TEXT
  );
  `,
  // 1.2: a counter every change to a key or an account moves (by trigger, whoever writes), so that
  // a server caching keys learns of a revocation by reading one row.
  `
  CREATE TABLE key_epoch (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    version  INTEGER NOT NULL
  );
  INSERT INTO key_epoch (id, version) VALUES (1, 0);
  CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys BEGIN UPDATE key_epoch SET version = version + 1; END;
  CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys BEGIN UPDATE key_epoch SET version = version + 1; END;
  CREATE TRIGGER accounts_updated AFTER UPDATE ON accounts BEGIN UPDATE key_epoch SET version = version + 1; END;
  CREATE TRIGGER accounts_deleted AFTER DELETE ON accounts BEGIN UPDATE key_epoch SET version = version + 1; END;
  `,
  // 1.3: a counter every change to a finished job moves (by trigger, whoever writes), so that a
  // server caching finished jobs learns of a deletion by reading one row. Jobs still queued or
  // running change without moving it (they are never cached).
  `
  CREATE TABLE job_epoch (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    version  INTEGER NOT NULL
  );
  INSERT INTO job_epoch (id, version) VALUES (1, 0);
  CREATE TRIGGER jobs_final_updated AFTER UPDATE ON jobs WHEN OLD.status IN ('completed', 'failed', 'cancelled') BEGIN UPDATE job_epoch SET version = version + 1; END;
  CREATE TRIGGER jobs_deleted AFTER DELETE ON jobs BEGIN UPDATE job_epoch SET version = version + 1; END;
  CREATE TRIGGER backups_updated AFTER UPDATE ON backups BEGIN UPDATE job_epoch SET version = version + 1; END;
  CREATE TRIGGER backups_deleted AFTER DELETE ON backups BEGIN UPDATE job_epoch SET version = version + 1; END;
  CREATE TRIGGER restores_updated AFTER UPDATE ON restores BEGIN UPDATE job_epoch SET version = version + 1; END;
  CREATE TRIGGER restores_deleted AFTER DELETE ON restores BEGIN UPDATE job_epoch SET version = version + 1; END;
  CREATE TRIGGER maintenance_updated AFTER UPDATE ON maintenance BEGIN UPDATE job_epoch SET version = version + 1; END;
  CREATE TRIGGER maintenance_deleted AFTER DELETE ON maintenance BEGIN UPDATE job_epoch SET version = version + 1; END;
  `,
];

export type Compression = 'zstd' | 'gzip' | 'none';
export type Overwrite = 'never' | 'if_changed' | 'always';

/** Progress counts regular files (the entries with content to read or write) and their bytes. */
export interface Progress {
  filesDone: number;
  /** 0 until the counting scan (backup) or the tree walk (restore) has finished. */
  filesTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

export interface EntryRecord {
  /** Relative to the backup source, '/'-separated bytes (names are bytes, not text). */
  path: Uint8Array;
  type: 'file' | 'directory' | 'symlink';
  size: number;
  mode: number;
  mtime: Date;
  sha256: string | null;
  linkTarget?: Uint8Array;
}

/** An entry that could not be backed up or restored, and why. */
export interface Warning {
  path: Uint8Array;
  reason: string;
}

/** Every problem counted; the first 100 listed. */
export interface Warnings {
  count: number;
  items: Warning[];
}

/** Per-blob compression code stored in the index: 0 none, 1 zstd, 2 gzip. */
export type CompressionCode = 0 | 1 | 2;

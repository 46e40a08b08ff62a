export type Compression = 'zstd' | 'gzip' | 'none';
export type Overwrite = 'never' | 'if_changed' | 'always';

export interface Progress {
  filesDone: number;
  filesTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

export interface EntryRecord {
  /** Relative to the backup source, '/'-separated. */
  path: string;
  type: 'file' | 'directory' | 'symlink';
  size: number;
  mode: number;
  mtime: Date;
  sha256: string | null;
  linkTarget?: string;
}

/** Per-blob compression code stored in the index: 0 none, 1 zstd, 2 gzip. */
export type CompressionCode = 0 | 1 | 2;

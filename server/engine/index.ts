/** The backup engine's public surface (documented in README.md). It knows nothing of HTTP. */
export type { Compression, EntryRecord, Overwrite, Progress, Warning, Warnings } from './types.ts';
export { EngineError } from './errors.ts';
export { Repository } from './repository.ts';
export { newMasterKey, masterKeyFromBytes, masterKeyToBytes } from './crypto.ts';
export type { MasterKey } from './crypto.ts';
export { hasLegacyKeys, unlockLegacyKey } from './keys.ts';
export type { Secret } from './keys.ts';
export { backup } from './backup.ts';
export type { BackupOptions, BackupResult } from './backup.ts';
export { restore } from './restore.ts';
export type { RestoreOptions, RestoreResult } from './restore.ts';
export { listEntries } from './list.ts';
export { verify } from './verify.ts';
export type { VerifyResult } from './verify.ts';
export type { SnapshotHeader } from './snapshot.ts';

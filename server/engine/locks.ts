import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomId } from './crypto.ts';
import { EngineError, fromStorage } from './errors.ts';
import { decodeMeta, encodeMeta } from './meta.ts';
import type { Repository } from './repository.ts';
import { ObjectNotFoundError } from './storage/errors.ts';

/**
 * Lock objects, locks/<random id>: how a prune learns which writers were at work before it
 * marked its candidates (see "Prune while backups run" in the README). Every backup holds one,
 * and any number of backups run at once; a prune or check holds one that no other prune or
 * check may hold beside it. A lock is saved again every 5 minutes while its operation runs and
 * removed at the end. It is stale, its holder taken for dead, when it was not saved for 30
 * minutes, or at once when its holder is a process of this machine (same host name, boot and
 * PID namespace) that no longer exists. A holder that could not save its lock for that long
 * has lost it and must not commit anything.
 */
export type LockKind = 'backup' | 'prune' | 'check';

export interface LockTiming {
  refreshMs: number;
  staleMs: number;
}

export const LOCK_TIMING: LockTiming = { refreshMs: 5 * 60_000, staleMs: 30 * 60_000 };

interface Holder {
  hostname: string;
  bootId: string;
  pidNamespace: string;
  pid: number;
}

interface LockBody extends Holder {
  kind: LockKind;
  created: string;
}

export interface LockInfo {
  name: string;
  kind: LockKind;
  created: string;
  /** When it was last saved (the object's time). */
  modified: Date;
  stale: boolean;
}

const MAINTENANCE: readonly LockKind[] = ['prune', 'check'];
/** How long a release waits for the storage to remove the lock. */
const RELEASE_WAIT = 2000;

function readOr(read: () => string): string {
  try {
    return read().trim();
  } catch {
    return '';
  }
}

const self: Holder = {
  hostname: hostname(),
  bootId: readOr(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')),
  pidNamespace: readOr(() => readlinkSync('/proc/self/ns/pid')),
  pid: process.pid,
};

/** Whether a process of this machine (same boot and PID namespace) is known to be gone. */
function holderIsGone(h: Partial<Holder>): boolean {
  if (h.hostname !== self.hostname || !self.bootId || h.bootId !== self.bootId || h.pidNamespace !== self.pidNamespace || typeof h.pid !== 'number') return false;
  if (h.pid === self.pid) return false;
  try {
    process.kill(h.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Every lock in the repository, with its staleness judged at `now` on the storage's clock (the
 * objects' times are the storage's). A lock that cannot be read counts as a live backup's.
 */
async function listLocks(repo: Repository, timing: LockTiming, now: (listed: Map<string, Date>) => number): Promise<LockInfo[]> {
  const listed = new Map<string, Date>();
  const out: LockInfo[] = [];
  try {
    for await (const { name, modified } of repo.backend.list('locks/')) listed.set(name, modified);
    const at = now(listed);
    for (const [name, modified] of listed) {
      let body: Partial<LockBody> = { kind: 'backup' };
      try {
        body = decodeMeta<LockBody>(repo.key, 'lock', await repo.backend.load(name), name);
      } catch (err) {
        if (err instanceof ObjectNotFoundError) continue; // released meanwhile
        if (!(err instanceof EngineError)) throw err;
      }
      const stale = at - modified.getTime() > timing.staleMs || holderIsGone(body);
      out.push({ name, kind: body.kind ?? 'backup', created: body.created ?? modified.toISOString(), modified, stale });
    }
  } catch (err) {
    throw fromStorage(err);
  }
  return out;
}

/** A lock this process holds, saved again periodically until released. */
export class RepositoryLock {
  readonly name: string;
  readonly kind: LockKind;
  private readonly repo: Repository;
  private readonly timing: LockTiming;
  private readonly data: Uint8Array;
  private savedAt: number;
  private timer: NodeJS.Timeout | null = null;
  private released = false;

  private constructor(repo: Repository, kind: LockKind, timing: LockTiming, data: Uint8Array) {
    this.repo = repo;
    this.kind = kind;
    this.timing = timing;
    this.data = data;
    this.name = `locks/${randomId()}`;
    this.savedAt = Date.now();
  }

  /** Takes a lock of `kind`. A prune or check fails with REPOSITORY_BUSY when another prune or check holds a live lock. */
  static async acquire(repo: Repository, kind: LockKind, timing: LockTiming = LOCK_TIMING): Promise<RepositoryLock> {
    const body: LockBody = { kind, ...self, created: new Date().toISOString() };
    const lock = new RepositoryLock(repo, kind, timing, encodeMeta(repo.key, 'lock', body));
    try {
      await repo.backend.save(lock.name, [lock.data]);
    } catch (err) {
      throw fromStorage(err);
    }
    lock.timer = setInterval(() => void lock.save(), timing.refreshMs).unref();
    if (MAINTENANCE.includes(kind)) {
      // Both may see each other and both step back; never may both go on.
      const others = (await lock.others().catch(async (err: unknown) => {
        await lock.release();
        throw err;
      })).filter((l) => !l.stale && MAINTENANCE.includes(l.kind));
      if (others.length > 0) {
        await lock.release();
        throw new EngineError('REPOSITORY_BUSY', `a ${others[0]!.kind} is already running on this repository`, { kind: others[0]!.kind });
      }
    }
    return lock;
  }

  private async save(): Promise<void> {
    if (this.released) return;
    try {
      await this.repo.backend.save(this.name, [this.data]);
      if (!this.released) this.savedAt = Date.now();
      else await this.repo.backend.remove(this.name); // released while saving
    } catch {
      // Tried again at the next period; held() tells when it has been too long.
    }
  }

  /**
   * Every other lock in the repository. "Now" is read on the storage's clock: this lock's own
   * time in the listing plus what passed here since it was saved, so a host whose clock is off
   * never takes a live lock for a stale one.
   */
  others(): Promise<LockInfo[]> {
    const savedAt = this.savedAt;
    return listLocks(this.repo, this.timing, (listed) => {
      const own = listed.get(this.name);
      return own ? own.getTime() + (Date.now() - savedAt) : Date.now();
    }).then((locks) => locks.filter((l) => l.name !== this.name));
  }

  /** Whether the lock still protects its holder: not released, and saved within the stale time. */
  held(): boolean {
    return !this.released && Date.now() - this.savedAt < this.timing.staleMs;
  }

  /** Throws LOCK_LOST when the holder may no longer count on the lock (before committing anything). */
  assertHeld(): void {
    if (!this.held()) throw new EngineError('LOCK_LOST', 'the repository lock could not be kept (the storage did not take its refresh for too long)');
  }

  /** Stops refreshing and removes the lock (best effort: a lock left behind goes stale). */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    if (this.timer) clearInterval(this.timer);
    // A storage that does not answer is not waited for long.
    const removed = this.repo.backend.remove(this.name).catch(() => {});
    await Promise.race([removed, new Promise((resolve) => setTimeout(resolve, RELEASE_WAIT).unref())]);
  }
}

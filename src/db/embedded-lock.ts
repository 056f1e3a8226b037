import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** What the lock file says about its holder. */
export interface EmbeddedLockHolder {
  pid: number;
  hostname: string;
  startedAt: string;
  command: string;
}

/** The embedded database directory is held by another live process. */
export class EmbeddedDatabaseBusyError extends Error {
  override name = 'EmbeddedDatabaseBusyError';
  constructor(
    readonly dataDir: string,
    readonly holder: EmbeddedLockHolder | undefined,
  ) {
    const who =
      holder === undefined
        ? 'another process'
        : `telesync process ${holder.pid} on ${holder.hostname} (${holder.command}, since ${holder.startedAt})`;
    super(
      `The embedded database in ${dataDir} is in use by ${who}. ` +
        'Only one process may open it at a time: wait for that one to finish, ' +
        'or set DATABASE_URL to a PostgreSQL server, which several processes can share.',
    );
  }
}

export const LOCK_FILE_NAME = 'telesync.lock';

/** Holds the lock file of an embedded database directory until `release` is called. */
export interface EmbeddedLock {
  readonly path: string;
  release(): void;
}

/**
 * Takes the lock file of `dataDir` for this process. PGlite does not guard its directory: two
 * processes that open it at once each keep their own copy in memory and one's writes are lost on
 * close, silently. The lock makes the second one fail at once with a clear error instead.
 *
 * A lock left by a process that no longer runs (killed, crashed) on this host is taken over.
 */
export function lockEmbeddedDirectory(dataDir: string, command: string): EmbeddedLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE_NAME);
  const me: EmbeddedLockHolder = {
    pid: process.pid,
    hostname: hostname(),
    startedAt: new Date().toISOString(),
    command,
  };

  for (let attempt = 0; attempt < 3; attempt++) {
    if (tryCreate(path, me)) return holdLock(path);
    const holder = readHolder(path);
    if (holder !== undefined && isAlive(holder))
      throw new EmbeddedDatabaseBusyError(dataDir, holder);
    removeStaleLock(path, holder);
  }
  throw new EmbeddedDatabaseBusyError(dataDir, readHolder(path));
}

/**
 * Creates the lock with its holder in one step: written to a file of its own, then linked to
 * `path`, which fails if `path` exists. Created empty and written after, a lock could be read
 * between the two by a process starting at the same moment, taken for stale and removed, and both
 * would open the database.
 */
function tryCreate(path: string, holder: EmbeddedLockHolder): boolean {
  const draft = `${path}.${process.pid}-${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, JSON.stringify(holder), { flag: 'wx' });
  try {
    linkSync(draft, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(draft, { force: true });
  }
}

function readHolder(path: string): EmbeddedLockHolder | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<EmbeddedLockHolder>;
    if (typeof parsed.pid !== 'number' || typeof parsed.hostname !== 'string') return undefined;
    return {
      pid: parsed.pid,
      hostname: parsed.hostname,
      startedAt: String(parsed.startedAt),
      command: String(parsed.command),
    };
  } catch {
    // Unreadable or damaged (telesync writes it whole, in one step): treat as stale.
    return undefined;
  }
}

function isAlive(holder: EmbeddedLockHolder): boolean {
  // A lock from another host cannot be checked; it is respected (the directory may be shared).
  if (holder.hostname !== hostname()) return true;
  if (holder.pid === process.pid) return true;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Moves a stale lock aside. The rename is atomic, so of two processes that both found it stale
 * only one moves it; if what was moved turns out to be a fresh lock of a third process (it
 * replaced the stale one in between), it is put back.
 */
function removeStaleLock(path: string, staleHolder: EmbeddedLockHolder | undefined): void {
  const aside = `${path}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const moved = readHolder(aside);
  if (moved !== undefined && staleHolder !== undefined && moved.pid !== staleHolder.pid) {
    try {
      renameSync(aside, path);
    } catch {
      // The fresh holder's lock could not be restored; its owner still holds the database open,
      // and the next attempt here will see whoever holds the path now.
    }
    return;
  }
  rmSync(aside, { force: true });
}

function holdLock(path: string): EmbeddedLock {
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    process.removeListener('exit', release);
    const holder = readHolder(path);
    if (holder?.pid === process.pid) rmSync(path, { force: true });
  };
  // A normal exit that skipped `release` (an uncaught error) still frees the directory.
  process.on('exit', release);
  return { path, release };
}

import { randomBytes } from 'node:crypto';
import {
  linkSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';

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
    const text = readLockText(path);
    // Gone since the create failed: its holder released it, so try again.
    if (text === undefined) continue;
    const holder = parseHolder(text);
    if (holder !== undefined && isAlive(holder))
      throw new EmbeddedDatabaseBusyError(dataDir, holder);
    removeStaleLock(path, text);
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

/** The lock file's text, or undefined when there is none. */
function readLockText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The holder a lock's text names, or undefined when it is damaged (then it is stale). */
function parseHolder(text: string): EmbeddedLockHolder | undefined {
  try {
    const parsed = JSON.parse(text) as Partial<EmbeddedLockHolder>;
    if (typeof parsed.pid !== 'number' || typeof parsed.hostname !== 'string') return undefined;
    return {
      pid: parsed.pid,
      hostname: parsed.hostname,
      startedAt: String(parsed.startedAt),
      command: String(parsed.command),
    };
  } catch {
    return undefined;
  }
}

function readHolder(path: string): EmbeddedLockHolder | undefined {
  const text = readLockText(path);
  return text === undefined ? undefined : parseHolder(text);
}

function isAlive(holder: EmbeddedLockHolder): boolean {
  // A lock from another host cannot be checked; it is respected (the directory may be shared).
  return holder.hostname !== hostname() || isRunningHere(holder.pid);
}

function isRunningHere(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the stale lock whose text was `staleText`. It is moved aside first, which is atomic, so
 * of two processes that both found it stale only one moves it; if what was moved is not that text,
 * the stale lock had been removed already and a live process's lock taken its place, so it is
 * linked back (unless a newer one exists) and left alone. Drafts that dead processes left behind
 * (`tryCreate`) go with it.
 */
function removeStaleLock(path: string, staleText: string): void {
  const aside = `${path}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (readLockText(aside) !== staleText) {
    try {
      linkSync(aside, path);
    } catch {
      // A newer lock holds the path already; whoever holds it is the one the next attempt meets.
    }
  } else {
    removeDeadDrafts(path);
  }
  rmSync(aside, { force: true });
}

/** Removes `tryCreate`'s drafts (`<lock>.<pid>-<hex>`) whose process no longer runs. */
function removeDeadDrafts(path: string): void {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  for (const name of readdirSync(dir)) {
    const pid = /^(\d+)-[0-9a-f]+$/.exec(name.slice(prefix.length))?.[1];
    if (!name.startsWith(prefix) || pid === undefined) continue;
    if (!isRunningHere(Number(pid))) rmSync(join(dir, name), { force: true });
  }
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

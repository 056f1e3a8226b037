import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { sleep } from '../util/sleep.js';
import type { Database } from './connect.js';

/**
 * One run per account and stream at a time, across processes and within one.
 *
 * Across processes: session-level Postgres advisory locks, released when the run ends or the
 * process dies (the session ends). Every lock of a process is held on one connection of its pool,
 * its lock session, kept while any lock is held or wanted: a run costs no connection of its own
 * for its lock, so a process's connections do not grow with the accounts it works on. Within a
 * process: a registry, because one session may take the same advisory lock twice (and the embedded
 * database is a single session; other processes cannot open it at all, see embedded-lock.ts).
 */

const heldInProcess = new Set<string>();

/**
 * The lock could not be taken without waiting, or not within the wait allowed. `message` says what
 * holds it and what to do, when the caller knows better than the lock's name.
 */
export class LockBusyError extends Error {
  override name = 'LockBusyError';
  constructor(
    readonly lockName: string,
    message = `another telesync run holds ${lockName}`,
  ) {
    super(message);
  }
}

/** A 64-bit advisory lock key from a name (schema, account, stream), as text for a bigint cast. */
export function advisoryLockKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}

/** The connection holding the lock ended: the lock is no longer held, whatever the holder does. */
export class LockLostError extends Error {
  override name = 'LockLostError';
  constructor(
    readonly lockName: string,
    options?: ErrorOptions,
  ) {
    super(
      `lost the database connection holding the lock ${lockName}; the run stopped writing (another run may now hold the lock). The next run continues from what was committed`,
      options,
    );
  }
}

/** How often the lock session's connection is checked to be alive. */
const LOCK_HEARTBEAT_MS = 1_000;

export interface LockOptions {
  /** Keep trying for this long before giving up; 0 gives up at once. */
  waitMs: number;
  /** Told once when the lock is busy and the caller will wait. */
  onWait?: () => void;
  signal?: AbortSignal;
  pollMs?: number;
}

/**
 * The connection that holds every advisory lock of a process's runs on one database, from the
 * first lock wanted until the last is released. When its connection fails, every lock on it is
 * gone at once: `lost` aborts, and the next lock wanted opens a new session.
 */
class LockSession {
  readonly #lost = new AbortController();
  readonly #connection: Promise<Kysely<unknown>>;
  readonly #heartbeat: ReturnType<typeof setInterval>;
  #end!: () => void;
  #checking: Promise<boolean> | undefined;
  /** Locks held and lock attempts under way: the session ends when none is left. */
  #users = 0;

  constructor(
    root: Kysely<unknown>,
    private readonly onEnd: (session: LockSession) => void,
  ) {
    // Every lock held on the session listens for its loss: as many listeners as accounts at once.
    setMaxListeners(0, this.#lost.signal);
    const ended = new Promise<void>((resolve) => (this.#end = resolve));
    this.#connection = new Promise((resolve, reject) => {
      root
        .connection()
        .execute(async (connection) => {
          resolve(connection);
          await ended;
          // Nothing should be held by now; a lock left by a failed unlock must not go back to the
          // pool with the connection.
          await sql`SELECT pg_advisory_unlock_all()`.execute(connection).catch(() => undefined);
        })
        .catch((error: unknown) => {
          this.#lose(error);
          reject(error instanceof Error ? error : new Error(String(error)));
        });
    });
    // An unopened session is told by the attempt that waits for it, not by an unhandled rejection.
    this.#connection.catch(() => undefined);
    this.#heartbeat = setInterval(() => void this.verify(), LOCK_HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  get lost(): AbortSignal {
    return this.#lost.signal;
  }

  join(): void {
    this.#users += 1;
  }

  /** One user is done; the last one ends the session and gives its connection back. */
  leave(): void {
    this.#users -= 1;
    if (this.#users > 0) return;
    clearInterval(this.#heartbeat);
    this.onEnd(this);
    this.#end();
  }

  async run<R>(query: RawBuilder<R>): Promise<R | undefined> {
    const result = await query.execute(await this.#connection);
    return result.rows[0];
  }

  /** Whether the session's connection answers; when it does not, every lock on it is lost. */
  verify(): Promise<boolean> {
    if (this.#lost.signal.aborted) return Promise.resolve(false);
    this.#checking ??= this.#connection
      .then((connection) => sql`SELECT 1`.execute(connection))
      .then(
        () => true,
        (error: unknown) => {
          this.#lose(error);
          return false;
        },
      )
      .finally(() => (this.#checking = undefined));
    return this.#checking;
  }

  #lose(cause: unknown): void {
    if (this.#lost.signal.aborted) return;
    this.#lost.abort(cause);
    // New locks go to a new session; this one ends when its holders have let go.
    this.onEnd(this);
  }
}

/** The open lock session of each database's pool. */
const sessions = new WeakMap<Kysely<unknown>, LockSession>();

function joinLockSession(root: Kysely<unknown>): LockSession {
  let session = sessions.get(root);
  if (session === undefined) {
    session = new LockSession(root, (ending) => {
      if (sessions.get(root) === ending) sessions.delete(root);
    });
    sessions.set(root, session);
  }
  session.join();
  return session;
}

/**
 * Runs `use` while holding the lock named `name`. Throws LockBusyError when it is held elsewhere
 * and not released within `waitMs`. `use` gets a signal that aborts, with LockLostError as its
 * reason, when the connection holding the lock ends (checked every second, and whenever `use`
 * calls `verifyLock`): from then on the lock may be someone else's, so the holder must stop
 * writing.
 */
export async function withAdvisoryLock<T>(
  database: Database,
  name: string,
  options: LockOptions,
  use: (lockLost: AbortSignal, verifyLock: () => Promise<boolean>) => Promise<T>,
): Promise<T> {
  const qualified = `${database.schema}:${name}`;
  const key = advisoryLockKey(`telesync:${qualified}`);
  const session = joinLockSession(database.root);
  try {
    const deadline = Date.now() + options.waitMs;
    let told = false;
    for (;;) {
      if (!heldInProcess.has(qualified)) {
        // Claimed in the registry before asking: on the shared session a second attempt of this
        // process would be granted the lock again.
        heldInProcess.add(qualified);
        let locked = false;
        try {
          const row = await session.run(
            sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${key}::bigint) AS locked`,
          );
          locked = row?.locked === true;
        } finally {
          if (!locked) heldInProcess.delete(qualified);
        }
        if (locked) break;
      }
      if (Date.now() >= deadline) throw new LockBusyError(name);
      if (!told) {
        options.onWait?.();
        told = true;
      }
      await sleep(
        Math.min(options.pollMs ?? 1000, Math.max(1, deadline - Date.now())),
        options.signal,
      );
    }
    const lost = new AbortController();
    const tell = (): void => lost.abort(new LockLostError(name, { cause: session.lost.reason }));
    if (session.lost.aborted) tell();
    else session.lost.addEventListener('abort', tell, { once: true });
    try {
      return await use(lost.signal, () => session.verify());
    } finally {
      session.lost.removeEventListener('abort', tell);
      // Unlocked before the registry lets another run of this process try: on this session the
      // lock would otherwise still be held (a new session would find it busy).
      await session.run(sql`SELECT pg_advisory_unlock(${key}::bigint)`).catch(() => undefined);
      heldInProcess.delete(qualified);
    }
  } finally {
    session.leave();
  }
}

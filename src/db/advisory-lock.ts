import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { sleep } from '../util/sleep.js';
import type { Database } from './connect.js';

/**
 * One run per account and stream at a time, across processes and within one.
 *
 * Across processes: a session-level Postgres advisory lock, held on a connection reserved for the
 * run, released when the run ends or the process dies (the session ends). Within a process: a
 * registry, because one session may take the same advisory lock twice (and the embedded database
 * is a single session; other processes cannot open it at all, see embedded-lock.ts).
 */

const heldInProcess = new Set<string>();

/** The lock could not be taken without waiting, or not within the wait allowed. */
export class LockBusyError extends Error {
  override name = 'LockBusyError';
  constructor(readonly lockName: string) {
    super(`another telesync run holds ${lockName}`);
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

/** How often the connection holding a lock is checked to be alive. */
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
  return database.root.connection().execute(async (connection) => {
    const deadline = Date.now() + options.waitMs;
    let told = false;
    for (;;) {
      if (!heldInProcess.has(qualified)) {
        const result = await sql<{
          locked: boolean;
        }>`SELECT pg_try_advisory_lock(${key}::bigint) AS locked`.execute(connection);
        if (result.rows[0]?.locked === true) break;
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
    heldInProcess.add(qualified);
    const lost = new AbortController();
    let checking: Promise<boolean> | undefined;
    /** Whether the lock is still held: its connection answers. Aborts `lost` when it does not. */
    const verify = (): Promise<boolean> => {
      if (lost.signal.aborted) return Promise.resolve(false);
      checking ??= sql`SELECT 1`
        .execute(connection)
        .then(
          () => true,
          (error: unknown) => {
            lost.abort(new LockLostError(name, { cause: error }));
            return false;
          },
        )
        .finally(() => (checking = undefined));
      return checking;
    };
    const heartbeat = setInterval(() => void verify(), LOCK_HEARTBEAT_MS);
    heartbeat.unref();
    try {
      return await use(lost.signal, verify);
    } finally {
      clearInterval(heartbeat);
      heldInProcess.delete(qualified);
      await sql`SELECT pg_advisory_unlock(${key}::bigint)`
        .execute(connection)
        .catch(() => undefined);
    }
  });
}

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { EMBEDDED_PGDATA_DIR, openDatabase, type Database } from '../../src/db/connect.js';
import { EmbeddedDatabaseBusyError, LOCK_FILE_NAME } from '../../src/db/embedded-lock.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { runTelesync, startTelesync } from '../support/run-telesync.js';

const dirs: string[] = [];
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'telesync-embedded-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const configFor = (dataDir: string) => ({ url: undefined, dataDir, schema: 'telephony' });

/** What the tests store: one row of sync_state. */
const STORED_ROW = { account_id: 'A', stream: 'trunk_calls' };

function storeRow(database: Database): Promise<unknown> {
  return database.db.insertInto('sync_state').values(STORED_ROW).execute();
}

/** The sync_state rows of the embedded database in `dataDir`, opened and closed for the read. */
async function storedRows(dataDir: string): Promise<unknown[]> {
  const database = await openDatabase(configFor(dataDir));
  try {
    return await database.db.selectFrom('sync_state').select(['account_id', 'stream']).execute();
  } finally {
    await database.close();
  }
}

/** A new directory migrated by `telesync migrate`. */
async function migratedDir(): Promise<string> {
  const dataDir = freshDir();
  const migrated = await runTelesync(['migrate'], { TELESYNC_DATA_DIR: dataDir });
  expect(migrated.code, migrated.stderr).toBe(0);
  return dataDir;
}

/**
 * The embedded database is this file's subject whatever database the harness chose: the embedded
 * pass (`npm test`) runs it, and the pass on the PostgreSQL of TEST_DATABASE_URL (CI's second) would
 * only run the same checks again.
 */
const repeatsTheEmbeddedPass = Boolean(process.env.TEST_DATABASE_URL);

const PROJECT_DIR = resolve(import.meta.dirname, '../..');
const LOCK_CONTENDER = join(PROJECT_DIR, 'test/support/lock-contender.ts');

/** The kernel's view of a process's peak resident memory (Linux). */
const PROC_STATUS = '/proc/self/status';

/**
 * The peak resident memory of process `pid` until `exited` settles, in bytes: its VmHWM (the
 * kernel's high-water mark) read every 20 ms, the last read just before it ended.
 */
async function peakResidentBytes(pid: number, exited: Promise<unknown>): Promise<number> {
  let peak = 0;
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kilobytes = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1] ?? 0);
      peak = Math.max(peak, kilobytes * 1024);
    } catch {
      // Ended between two reads: the last one stands.
    }
  };
  const timer = setInterval(read, 20);
  try {
    await exited;
  } finally {
    clearInterval(timer);
  }
  return peak;
}

interface LockContender {
  /** Starts a round: the contender tries to take the lock once. */
  go(): void;
  /** Its answer to the oldest round not yet answered: `took`, `busy` or `overlap`. */
  answer(): Promise<string>;
  end(): void;
}

/** A process of test/support/lock-contender.ts contending for `dataDir`'s lock. */
function startLockContender(dataDir: string): LockContender {
  const child = spawn(process.execPath, ['--import', 'tsx', LOCK_CONTENDER, dataDir], {
    cwd: PROJECT_DIR,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const waiting: ((line: string) => void)[] = [];
  const early: string[] = [];
  lines.on('line', (line) => {
    const waiter = waiting.shift();
    if (waiter === undefined) early.push(line);
    else waiter(line);
  });
  const ended = new Promise<string>((resolve) =>
    child.once('exit', (code) => resolve(`exit ${code}`)),
  );
  return {
    go: () => child.stdin.write('go\n'),
    answer: () => {
      const line = early.shift();
      if (line !== undefined) return Promise.resolve(line);
      return Promise.race([new Promise<string>((resolve) => waiting.push(resolve)), ended]);
    },
    end: () => child.stdin.end(),
  };
}

describe.skipIf(repeatsTheEmbeddedPass)('the embedded database directory', () => {
  it('is held by one process: a second one gets a clear error and writes nothing', async () => {
    const dataDir = freshDir();
    const holder = await openDatabase(configFor(dataDir), { command: 'telesync test-holder' });
    try {
      await migrateToLatest(holder);
      await storeRow(holder);

      const second = await runTelesync(['migrate'], { TELESYNC_DATA_DIR: dataDir });
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(`in use by telesync process ${process.pid}`);
      expect(second.stderr).toContain('telesync test-holder');
      expect(second.stderr).toMatch(/set DATABASE_URL/);

      await expect(openDatabase(configFor(dataDir))).rejects.toBeInstanceOf(
        EmbeddedDatabaseBusyError,
      );
    } finally {
      await holder.close();
    }
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);

    // What the holder wrote survived its close and the refused second process.
    expect(await storedRows(dataDir)).toEqual([STORED_ROW]);
  });

  it('is taken over from a process that died holding it', async () => {
    const dataDir = freshDir();
    // A pid far above the kernel's default pid_max: no such process exists.
    writeFileSync(
      join(dataDir, LOCK_FILE_NAME),
      JSON.stringify({
        pid: 4_000_000_000,
        hostname: (await import('node:os')).hostname(),
        startedAt: 'x',
        command: 'dead',
      }),
    );
    // The draft of a lock that process was creating when it died, and one of a live process.
    const deadDraft = join(dataDir, `${LOCK_FILE_NAME}.4000000000-0a1b2c3d`);
    const liveDraft = join(dataDir, `${LOCK_FILE_NAME}.${process.pid}-0a1b2c3d`);
    writeFileSync(deadDraft, '{}');
    writeFileSync(liveDraft, '{}');
    const result = await runTelesync(['migrate'], { TELESYNC_DATA_DIR: dataDir });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/applied {2}0001-initial-schema/);
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);
    expect([existsSync(deadDraft), existsSync(liveDraft)]).toEqual([false, true]);
  });

  it('lets one process in at a time when many take it at the same moment', async () => {
    const dataDir = freshDir();
    const rounds = 300;
    const contenders = Array.from({ length: 8 }, () => startLockContender(dataDir));
    const answers: Record<string, number> = {};
    try {
      for (let round = 0; round < rounds; round++) {
        for (const contender of contenders) contender.go();
        for (const answer of await Promise.all(contenders.map((c) => c.answer()))) {
          answers[answer] = (answers[answer] ?? 0) + 1;
        }
      }
    } finally {
      for (const contender of contenders) contender.end();
    }
    // Before the lock was created with its holder and a vanished lock was retried, not removed,
    // 300 such rounds let two processes in 6 to 71 times.
    expect(answers.overlap ?? 0).toBe(0);
    expect(answers.took).toBeGreaterThanOrEqual(rounds);
    expect((answers.took ?? 0) + (answers.busy ?? 0)).toBe(rounds * contenders.length);
  }, 60_000);

  it("opens after a process killed in PGlite's start-up left PostgreSQL's lock file empty", async () => {
    const dataDir = await migratedDir();
    const database = await openDatabase(configFor(dataDir));
    try {
      await storeRow(database);
    } finally {
      await database.close();
    }
    // PGlite creates postmaster.pid empty, then writes it: a SIGKILL in between leaves this.
    writeFileSync(join(dataDir, EMBEDDED_PGDATA_DIR, 'postmaster.pid'), '');

    const again = await runTelesync(['migrate'], { TELESYNC_DATA_DIR: dataDir });
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(await storedRows(dataDir)).toEqual([STORED_ROW]);
  });

  it('that PostgreSQL cannot start is named in one line with what to do, and left as it was', async () => {
    const dataDir = await migratedDir();
    // Files of another PostgreSQL major version, as after a change of PGlite.
    const pgdata = join(dataDir, EMBEDDED_PGDATA_DIR);
    writeFileSync(join(pgdata, 'PG_VERSION'), '99\n');

    const refused = await runTelesync(['migrate'], { TELESYNC_DATA_DIR: dataDir });
    expect(refused.code).toBe(1);
    const lines = refused.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`cannot start the embedded database in ${dataDir}`);
    // PostgreSQL's own reason, which PGlite's error leaves out.
    expect(lines[0]).toMatch(
      /PostgreSQL: database files are incompatible with server \(The data directory was initialized by PostgreSQL version 99, /,
    );
    expect(lines[0]).toContain(`move ${pgdata} aside`);
    expect(lines[0]).toContain('set DATABASE_URL');
    expect(readFileSync(join(pgdata, 'PG_VERSION'), 'utf8')).toBe('99\n');
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);
  });

  it.skipIf(!existsSync(PROC_STATUS))(
    'serves a short command without optimising PostgreSQL: it ends with the work, at a third of the memory',
    async () => {
      const dataDir = await migratedDir();
      const status = startTelesync(['status'], { TELESYNC_DATA_DIR: dataDir });
      const peak = await peakResidentBytes(status.pid!, status.exited);
      const result = await status.exited;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('No account has been synced yet');
      // With V8's default budget the command waits, before it can exit, for the compile of one of
      // PGlite's largest functions and peaks at 650-700 MB; without that compile, about 300 MB.
      expect(peak).toBeGreaterThan(50 * 1024 * 1024);
      expect(peak).toBeLessThan(500 * 1024 * 1024);
    },
  );
});

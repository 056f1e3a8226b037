import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertRun } from '../../src/db/repositories/sync-runs-repository.js';
import {
  completeWindow,
  failWindow,
  insertPlannedWindows,
  markWindowRunning,
  restoreWindowStatus,
  recordWindowChanges,
  type WindowChange,
} from '../../src/db/repositories/sync-windows-repository.js';
import type { LedgerKey, SlotWindow } from '../../src/domain/ledger-entry.js';
import { upsertDataRows } from '../../src/db/data-loader.js';
import { TRUNK_CALLS } from '../../src/db/table-specs.js';
import { formatIsoMicros, MICROS_PER_DAY, parseEpochMicros } from '../../src/util/micros.js';
import { trunkCallRow } from '../support/load-rows.js';
import { createTestDatabase, harnessTarget, type TestDatabase } from '../support/test-database.js';

const FIRST = parseEpochMicros('2026-11-10T00:00:00Z')!;
const day = (index: number, endHours = 24): SlotWindow => ({
  slotStart: FIRST + index * MICROS_PER_DAY,
  start: FIRST + index * MICROS_PER_DAY,
  end: FIRST + index * MICROS_PER_DAY + (endHours * MICROS_PER_DAY) / 24,
});

/** A trunk-call run of this test, for the ledger's last_run_id. */
function testRun(db: Parameters<typeof insertRun>[0], accountId: string): Promise<number> {
  return insertRun(db, {
    accountId,
    stream: 'trunk_calls',
    command: 'test',
    pid: process.pid,
    host: 'test',
  });
}

/**
 * recordWindowChanges writes in one statement what markWindowRunning and completeWindow write one
 * after another: the same changes, applied both ways to two accounts' ledgers, leave the same rows.
 */
describe(`recordWindowChanges (${harnessTarget().description})`, () => {
  let handle: TestDatabase;
  let runId: number;
  const together: LedgerKey = { accountId: 'MA_TOGETHER', stream: 'trunk_calls' };
  const oneByOne: LedgerKey = { accountId: 'MA_ONE_BY_ONE', stream: 'trunk_calls' };

  beforeAll(async () => {
    handle = await createTestDatabase();
    runId = await testRun(handle.database.db, together.accountId);
  });
  afterAll(async () => {
    await handle?.close();
  });

  async function ledgerOf(key: LedgerKey): Promise<Record<string, unknown>[]> {
    const rows = await handle.database.db
      .selectFrom('sync_windows')
      .select([
        'slot_start',
        'time_range',
        'status',
        'total_count',
        'rows_stored',
        'attempts',
        'last_error',
        'last_run_id',
        'read_at',
        'verified_at',
      ])
      .where('account_id', '=', key.accountId)
      .orderBy('slot_start')
      .execute();
    return rows.map((row) => ({ ...row }));
  }

  it('leaves the rows the two statements would, one after another, in every case', async () => {
    const { db, schema } = handle.database;
    // Slot 0, 1, 3 planned; slot 2 failed before; slot 4 has no row at all.
    for (const key of [together, oneByOne]) {
      await insertPlannedWindows(db, key, [day(0), day(1), day(2), day(3), day(5), day(6)]);
      await failWindow(db, key, day(2).slotStart, 'the service answered 500', runId);
      // Slot 6 failed, slot 5 complete: below, each is only marked running (a re-read begun).
      await failWindow(db, key, day(6).slotStart, 'the service answered 503', runId);
      await completeWindow(db, schema, key, {
        ...day(5, 20),
        totalCount: 3,
        runId,
        readAt: '2026-11-20T00:30:00Z',
      });
      // Slot 3 was read in full before: its completion below only confirms it.
      await markWindowRunning(db, schema, key, day(3), runId);
      await completeWindow(db, schema, key, {
        ...day(3, 12),
        totalCount: 7,
        runId,
        readAt: '2026-11-20T01:00:00.123456Z',
      });
      // Calls of the account in the slots, for rows_stored.
      await db.transaction().execute((trx) =>
        upsertDataRows(
          trx,
          schema,
          TRUNK_CALLS,
          [0, 0, 1, 2, 3].map((index, n) => ({
            ...trunkCallRow(`${key.accountId}-${n}`),
            account_id: key.accountId,
            end_time: formatIsoMicros(day(index).start + 3_600_000_000),
          })),
          '2026-11-20T00:00:00Z',
        ),
      );
    }
    const changes: WindowChange[] = [
      { kind: 'running', window: day(0), runId },
      {
        kind: 'complete',
        completion: { ...day(0), totalCount: 2, runId, readAt: '2026-11-20T02:00:00.000001Z' },
      },
      { kind: 'running', window: day(1), runId },
      { kind: 'running', window: day(2), runId },
      {
        kind: 'complete',
        completion: { ...day(2), totalCount: 1, runId, readAt: '2026-11-20T02:00:01Z' },
      },
      {
        kind: 'complete',
        completion: { ...day(3), totalCount: 7, runId, verifiedAt: '2026-11-20T02:00:02Z' },
      },
      { kind: 'running', window: day(5), runId },
      { kind: 'running', window: day(6), runId },
      { kind: 'running', window: day(4), runId },
      {
        kind: 'complete',
        completion: { ...day(4, 6), totalCount: 0, runId, readAt: '2026-11-20T02:00:03Z' },
      },
    ];
    await db.transaction().execute((trx) => recordWindowChanges(trx, schema, together, changes));
    await db.transaction().execute(async (trx) => {
      for (const change of changes) {
        if (change.kind === 'running')
          await markWindowRunning(trx, schema, oneByOne, change.window, change.runId);
        else if (change.kind === 'complete')
          await completeWindow(trx, schema, oneByOne, change.completion);
      }
    });
    const expected = await ledgerOf(oneByOne);
    expect(expected.map((row) => [row.status, row.attempts, row.rows_stored])).toEqual([
      ['complete', 1, 2],
      ['running', 1, null],
      ['complete', 1, 1],
      ['complete', 1, 1],
      ['complete', 1, 0],
      ['running', 1, 0],
      ['running', 1, null],
    ]);
    expect(await ledgerOf(together)).toEqual(expected);
  });

  it('a window read again after its completion in the same transaction ends running, as in order', async () => {
    const { db, schema } = handle.database;
    const window = day(8);
    for (const key of [together, oneByOne]) await insertPlannedWindows(db, key, [window]);
    const completion = { ...window, totalCount: 0, runId, readAt: '2026-11-20T03:00:00Z' };
    const changes: WindowChange[] = [
      { kind: 'running', window, runId },
      { kind: 'complete', completion },
      { kind: 'running', window, runId },
    ];
    await db.transaction().execute((trx) => recordWindowChanges(trx, schema, together, changes));
    await db.transaction().execute(async (trx) => {
      await markWindowRunning(trx, schema, oneByOne, window, runId);
      await completeWindow(trx, schema, oneByOne, completion);
      await markWindowRunning(trx, schema, oneByOne, window, runId);
    });
    const [expected] = (await ledgerOf(oneByOne)).filter(
      (row) => row.status === 'running' && row.attempts === 2,
    );
    expect(expected).toBeDefined();
    expect(await ledgerOf(together)).toEqual(await ledgerOf(oneByOne));
  });

  it('a run that lost its slot to another run neither restores nor fails it; its own slots it does', async () => {
    const { db, schema } = handle.database;
    const key: LedgerKey = { accountId: 'MA_TAKEN_OVER', stream: 'trunk_calls' };
    const newer = await testRun(db, key.accountId);
    await insertPlannedWindows(db, key, [day(10), day(11), day(12), day(13)]);
    for (const slot of [10, 11, 12, 13]) await markWindowRunning(db, schema, key, day(slot), runId);
    // The older run lost its lock: the newer one took day 10 (running) and read day 11 in full.
    await markWindowRunning(db, schema, key, day(10), newer);
    await completeWindow(db, schema, key, {
      ...day(11, 4),
      totalCount: 4,
      runId: newer,
      readAt: '2026-11-20T04:00:00Z',
    });
    await restoreWindowStatus(db, key, day(10).slotStart, 'planned', runId);
    await failWindow(db, key, day(11).slotStart, 'the service answered 500', runId);
    // Days 12 and 13 are still the older run's own.
    await restoreWindowStatus(db, key, day(12).slotStart, 'planned', runId);
    await failWindow(db, key, day(13).slotStart, 'the service answered 503', runId);
    const rows = (await ledgerOf(key)).map((row) => [row.status, row.last_run_id, row.last_error]);
    expect(rows).toEqual([
      ['running', newer, null],
      ['complete', newer, null],
      ['planned', runId, null],
      ['failed', runId, 'the service answered 503'],
    ]);
  });
});

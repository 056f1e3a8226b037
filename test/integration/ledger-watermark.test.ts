import type { Kysely } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { insertRun } from '../../src/db/repositories/sync-runs-repository.js';
import {
  advanceWatermarkFromLedger,
  findSyncState,
} from '../../src/db/repositories/sync-state-repository.js';
import {
  completeWindow,
  failWindow,
  insertPlannedWindows,
} from '../../src/db/repositories/sync-windows-repository.js';
import type { Tables } from '../../src/db/schema.js';
import type { IncrementalPass, LedgerKey, SlotWindow } from '../../src/domain/ledger-entry.js';
import { formatIsoMicros, MICROS_PER_DAY, parseEpochMicros } from '../../src/util/micros.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const at = (text: string) => parseEpochMicros(text)!;
const KEY: LedgerKey = { accountId: 'MA_LEDGER', stream: 'trunk_calls' };
const FIRST = at('2026-11-10T00:00:00Z');
/** Four day-slots of one incremental pass, oldest first. */
const DAYS: SlotWindow[] = [0, 1, 2, 3].map((day) => ({
  slotStart: FIRST + day * MICROS_PER_DAY,
  start: FIRST + day * MICROS_PER_DAY,
  end: FIRST + (day + 1) * MICROS_PER_DAY,
}));
const dayEnd = (day: number) => formatIsoMicros(DAYS[day]!.end);
const PASS: IncrementalPass = {
  from: DAYS[0]!.start,
  fromSlot: DAYS[0]!.slotStart,
  to: DAYS[3]!.end,
  startedAt: at('2026-11-20T00:00:00Z'),
};
/** After the pass started: a window read now counts towards its watermark. */
const READ_NOW = '2026-11-20T01:00:00Z';

describe('the watermark derived from the ledger', () => {
  let handle: TestDatabase;
  let runId: number;
  beforeAll(async () => {
    handle = await createTestDatabase();
    runId = await insertRun(handle.database.db, {
      accountId: KEY.accountId,
      stream: KEY.stream,
      command: 'test',
      pid: process.pid,
      host: 'test',
    });
  });
  afterAll(async () => {
    await handle?.close();
  });
  beforeEach(async () => {
    const { db } = handle.database;
    await db.deleteFrom('sync_windows').execute();
    await db.deleteFrom('sync_state').execute();
    await insertPlannedWindows(db, KEY, DAYS);
  });

  /** What the trunk-call stream's commit hook does: complete the window, derive the watermark. */
  async function completeInTransaction(
    trx: Kysely<Tables>,
    window: SlotWindow,
    stamp: { readAt?: string; verifiedAt?: string } = { readAt: READ_NOW },
    pass: IncrementalPass = PASS,
  ): Promise<void> {
    await completeWindow(trx, handle.database.schema, KEY, {
      ...window,
      totalCount: 0,
      runId,
      ...stamp,
    });
    await advanceWatermarkFromLedger(trx, KEY, pass);
  }
  const complete = (day: number, stamp?: { readAt?: string; verifiedAt?: string }) =>
    handle.database.db
      .transaction()
      .execute((trx) => completeInTransaction(trx, DAYS[day]!, stamp));
  const watermark = async () =>
    (await findSyncState(handle.database.db, KEY.accountId, KEY.stream)).watermark;

  it('moves to the end of the contiguous complete windows after each commit, in any order', async () => {
    await complete(2);
    expect(await watermark()).toBeUndefined();
    await complete(0);
    expect(await watermark()).toBe(dayEnd(0));
    await complete(3);
    expect(await watermark()).toBe(dayEnd(0));
    await complete(1, { verifiedAt: READ_NOW });
    expect(await watermark()).toBe(dayEnd(3));
  });

  it('is held back by a failed window, and moves on once it completes', async () => {
    await complete(0);
    await failWindow(handle.database.db, KEY, DAYS[1]!.slotStart, 'did not add up', runId);
    await complete(2);
    await complete(3);
    expect(await watermark()).toBe(dayEnd(0));
    await complete(1);
    expect(await watermark()).toBe(dayEnd(3));
  });

  it('counts only windows this pass confirmed: a window complete from an earlier run does not move it', async () => {
    // Day 1 was read by an earlier run (before this pass started) and not yet re-checked.
    await complete(1, { readAt: '2026-11-19T12:00:00Z' });
    await complete(0);
    expect(await watermark()).toBe(dayEnd(0));
  });

  it('never moves back, and a window before the pass (a deep re-check) neither moves nor holds it', async () => {
    await handle.database.db
      .insertInto('sync_state')
      .values({ account_id: KEY.accountId, stream: KEY.stream, watermark: dayEnd(2) })
      .execute();
    await complete(0);
    expect(await watermark()).toBe(dayEnd(2));

    const later: IncrementalPass = { ...PASS, from: DAYS[2]!.start, fromSlot: DAYS[2]!.slotStart };
    const run = (day: number) =>
      handle.database.db
        .transaction()
        .execute((trx) => completeInTransaction(trx, DAYS[day]!, { readAt: READ_NOW }, later));
    await failWindow(handle.database.db, KEY, DAYS[1]!.slotStart, 'did not add up', runId);
    await run(2);
    await run(3);
    expect(await watermark()).toBe(dayEnd(3));
  });

  it('two transactions completing neighbouring windows at once leave it past both', async (context) => {
    if (handle.target.kind !== 'postgres') context.skip();
    const { db } = handle.database;
    let dayZeroWritten!: () => void;
    let dayOneWritten!: () => void;
    const zeroWritten = new Promise<void>((resolve) => (dayZeroWritten = resolve));
    const oneWritten = new Promise<void>((resolve) => (dayOneWritten = resolve));
    const complete = (trx: Kysely<Tables>, day: number) =>
      completeWindow(trx, handle.database.schema, KEY, {
        ...DAYS[day]!,
        totalCount: 0,
        runId,
        readAt: READ_NOW,
      });
    // Each writes its window before either derives the watermark; the first then holds its
    // transaction open a moment, so without the lock the second would derive it from a ledger
    // that lacks the first window and leave the watermark at day 0.
    const first = db.transaction().execute(async (trx) => {
      await complete(trx, 0);
      dayZeroWritten();
      await oneWritten;
      await advanceWatermarkFromLedger(trx, KEY, PASS);
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    const second = db.transaction().execute(async (trx) => {
      await zeroWritten;
      await complete(trx, 1);
      dayOneWritten();
      await new Promise((resolve) => setTimeout(resolve, 50));
      await advanceWatermarkFromLedger(trx, KEY, PASS);
    });
    await Promise.all([first, second]);
    expect(await watermark()).toBe(dayEnd(1));
  });
});

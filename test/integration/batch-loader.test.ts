import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { TRUNK_CALLS } from '../../src/db/table-specs.js';
import {
  BatchLoader,
  loadLanesFor,
  type CommitBatch,
  type CommitHook,
  type LoadTarget,
} from '../../src/load/batch-loader.js';
import { LoadGate } from '../../src/load/load-gate.js';
import { insertRun } from '../../src/db/repositories/sync-runs-repository.js';
import { epochMicrosFromMillis } from '../../src/util/micros.js';
import { trunkCallRow as call } from '../support/load-rows.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const opened: TestDatabase[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((test) => test.close()));
});

async function loaderTarget(): Promise<LoadTarget & { test: TestDatabase }> {
  const test = await createTestDatabase();
  opened.push(test);
  return {
    test,
    database: test.database,
    runId: 1,
    now: () => epochMicrosFromMillis(Date.now()),
    stats: {
      recordsUpserted: 0,
      recordsChanged: 0,
      recordsRejected: 0,
      loadWaitMs: 0,
      directConflicts: 0,
    },
  };
}

/** The id of the transaction `trx` is. */
async function transactionOf(trx: Parameters<CommitHook>[0]): Promise<string> {
  return (await sql<{ id: string }>`SELECT txid_current()::text AS id`.execute(trx)).rows[0]!.id;
}

/** A loader whose committed units wait (a minute at most) for a full batch or a drain. */
function waitingLoader(target: LoadTarget, lanes: number, batchSize: number): BatchLoader {
  return new BatchLoader(target, TRUNK_CALLS, { lanes, batchSize, unitDelayMs: 60_000 });
}

/** What a unit's hook saw: its transaction, and how many of the calls were stored by then. */
interface HookSight {
  readonly unit: number;
  readonly transaction: string;
  readonly stored: number;
}

describe('BatchLoader', () => {
  it('copies new rows straight in, and upserts rows said to be maybe stored without trying that', async () => {
    const target = await loaderTarget();
    const rows = Array.from({ length: 30 }, (_, index) => call(`s${index}`));
    const load = async (options?: { mayBeStored: boolean }): Promise<void> => {
      const loader = new BatchLoader(target, TRUNK_CALLS, { lanes: 2, batchSize: 10 });
      loader.buffer(rows, [], options);
      await loader.drain();
    };
    await load();
    expect(target.stats).toMatchObject({ recordsUpserted: 30, recordsChanged: 30 });
    expect(target.stats.directConflicts).toBe(0);
    // The same rows again, unannounced: the plain COPY is tried and meets them.
    await load();
    expect(target.stats.directConflicts).toBeGreaterThan(0);
    const conflicts = target.stats.directConflicts;
    // Announced as maybe stored: straight to the upsert, nothing changed.
    await load({ mayBeStored: true });
    expect(target.stats.directConflicts).toBe(conflicts);
    expect(target.stats).toMatchObject({ recordsUpserted: 90, recordsChanged: 30 });
    const stored = await sql<{ count: number }>`
      SELECT count(*)::int AS count FROM ${sql.id(target.database.schema, 'trunk_calls')}`.execute(
      target.database.root,
    );
    expect(stored.rows[0]!.count).toBe(30);
  });

  it('with a unit delay, units committed in a row share one transaction, each with all its rows', async () => {
    const target = await loaderTarget();
    const loader = waitingLoader(target, 2, 1_000);
    const seen: HookSight[] = [];
    const committed: number[] = [];
    for (let unit = 0; unit < 3; unit++) {
      loader.buffer(
        Array.from({ length: 10 }, (_, index) => call(`u${unit}-${index}`)),
        [],
      );
      await loader.room();
      loader.queueCommit(
        async (trx) => {
          const row = await sql<{ transaction: string; stored: number }>`
            SELECT txid_current()::text AS transaction,
              (SELECT count(*)::int FROM ${sql.id(target.database.schema, 'trunk_calls')}
               WHERE call_uuid LIKE ${`u${unit}-%`}) AS stored`.execute(trx);
          seen.push({ unit, ...row.rows[0]! });
        },
        () => committed.push(unit),
      );
    }
    // Nothing written yet, well after a hook's round trip: the units wait for more (up to a minute
    // here).
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen).toEqual([]);
    expect(committed).toEqual([]);
    await loader.drain();
    expect(committed).toEqual([0, 1, 2]);
    // Nothing held the reading back: room never waited.
    expect(target.stats.loadWaitMs).toBe(0);
    expect(seen.map((sight) => sight.unit)).toEqual([0, 1, 2]);
    expect(new Set(seen.map((sight) => sight.transaction)).size).toBe(1);
    // Each unit's rows, on both lanes, were stored when its hook ran.
    expect(seen.map((sight) => sight.stored)).toEqual([10, 10, 10]);
    expect(target.stats.recordsUpserted).toBe(30);
  });

  it('units of one batch that share a transaction are written by one call, split by a plain hook', async () => {
    const target = await loaderTarget();
    const loader = waitingLoader(target, 1, 1_000);
    const calls: { items: string[]; transaction: string }[] = [];
    const batch: CommitBatch<string> = {
      async write(trx, items) {
        calls.push({ items: [...items], transaction: await transactionOf(trx) });
      },
    };
    const committed: string[] = [];
    const plain: string[] = [];
    for (const item of ['a', 'b', 'c'])
      loader.queueBatched(batch, item, () => committed.push(item));
    loader.queueCommit(async (trx) => {
      plain.push(await transactionOf(trx));
    });
    for (const item of ['d', 'e']) loader.queueBatched(batch, item, () => committed.push(item));
    await loader.drain();
    expect(calls.map((call) => call.items)).toEqual([
      ['a', 'b', 'c'],
      ['d', 'e'],
    ]);
    // All in one transaction, in the order queued, and each unit told once it committed.
    expect(new Set([...calls.map((call) => call.transaction), ...plain]).size).toBe(1);
    expect(committed).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('a full batch takes the waiting units with it; without a delay each unit is its own transaction', async () => {
    const target = await loaderTarget();
    const grouped = waitingLoader(target, 1, 20);
    const groupedSeen: string[] = [];
    const hook =
      (into: string[]): CommitHook =>
      async (trx) => {
        into.push(await transactionOf(trx));
      };
    grouped.buffer([call('g-1')], []);
    await grouped.room();
    grouped.queueCommit(hook(groupedSeen));
    // 20 rows buffered: the batch goes at once, with the unit waiting.
    grouped.buffer(
      Array.from({ length: 19 }, (_, index) => call(`g-${index + 2}`)),
      [],
    );
    await grouped.room();
    await expect.poll(() => groupedSeen.length).toBe(1);
    await grouped.drain();

    const alone = new BatchLoader(target, TRUNK_CALLS, { lanes: 1, batchSize: 1_000 });
    const aloneSeen: string[] = [];
    for (let unit = 0; unit < 3; unit++) {
      alone.buffer([call(`a-${unit}`)], []);
      await alone.room();
      alone.queueCommit(hook(aloneSeen));
    }
    await alone.drain();
    expect(new Set(aloneSeen).size).toBe(3);
  });

  it('loaders sharing a gate of one connection never have two transactions open; every row is stored', async () => {
    const target = await loaderTarget();
    const gate = new LoadGate(1, 60);
    let open = 0;
    let mostOpen = 0;
    const loaders = Array.from(
      { length: 4 },
      (_, index) =>
        new BatchLoader({ ...target, runId: index + 1, loadGate: gate }, TRUNK_CALLS, {
          lanes: 2,
          batchSize: 25,
        }),
    );
    let mostQueuedWhileWriting = 0;
    const watch: CommitHook = async (trx) => {
      open++;
      mostOpen = Math.max(mostOpen, open);
      mostQueuedWhileWriting = Math.max(mostQueuedWhileWriting, gate.queuedRows);
      // Long enough for another loader's transaction to start, were the gate not holding it.
      await sql`SELECT pg_sleep(0.02)`.execute(trx);
      open--;
    };
    let mostQueuedAfterRoom = 0;
    await Promise.all(
      loaders.map(async (loader, index) => {
        for (let page = 0; page < 10; page++) {
          loader.buffer(
            Array.from({ length: 20 }, (_, row) => call(`gate-${index}-${page}-${row}`)),
            [],
          );
          await loader.room();
          mostQueuedAfterRoom = Math.max(mostQueuedAfterRoom, gate.queuedRows);
          if (page % 3 === 2) loader.queueCommit(watch);
        }
        loader.queueCommit(watch);
        await loader.drain();
      }),
    );
    expect(mostOpen).toBe(1);
    // add returns once the process's queued rows are within the gate's bound; a commit queued by
    // another loader meanwhile adds at most what that loader buffered (a batch per lane).
    // The bound was reached (the loaders had to wait for room), and held after every add.
    expect(mostQueuedWhileWriting).toBeGreaterThan(60);
    expect(mostQueuedAfterRoom).toBeLessThanOrEqual(60 + loaders.length * 2 * 25);
    // Those waits are counted: each commit holds the one connection 20 ms, and forty commits
    // of four loaders queue behind it.
    expect(target.stats.loadWaitMs).toBeGreaterThan(20);
    expect(gate.queuedRows).toBe(0);
    const stored = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM ${sql.id(target.database.schema, 'trunk_calls')}`.execute(
      target.database.db,
    );
    expect(stored.rows[0]!.n).toBe(4 * 10 * 20);
    expect(target.stats.recordsUpserted).toBe(4 * 10 * 20);
  });

  it('with a gate, committed units wait only while its connections are busy, then go together', async () => {
    const target = await loaderTarget();
    const gate = new LoadGate(1, 10_000);
    // Units may wait a minute here: every wait seen below is the gate's doing, not the delay's.
    const batching = { lanes: 1, batchSize: 1_000, unitDelayMs: 60_000 };
    const first = new BatchLoader({ ...target, loadGate: gate }, TRUNK_CALLS, batching);
    const second = new BatchLoader({ ...target, runId: 2, loadGate: gate }, TRUNK_CALLS, batching);
    const seen: { unit: string; transaction: string }[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    first.buffer([call('free-1')], []);
    await first.room();
    // The gate's one connection is free: the unit goes at once and holds it until released.
    first.queueCommit(async (trx) => {
      seen.push({ unit: 'first', transaction: await transactionOf(trx) });
      await held;
    });
    await expect.poll(() => seen.length).toBe(1);
    for (const unit of ['second-a', 'second-b']) {
      second.buffer([call(unit)], []);
      await second.room();
      second.queueCommit(async (trx) => {
        seen.push({ unit, transaction: await transactionOf(trx) });
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The connection is busy: the second loader's units wait for it.
    expect(seen.map((sight) => sight.unit)).toEqual(['first']);
    release();
    // Freed, it goes to the units waiting, both in one transaction, well before their minute.
    await expect.poll(() => seen.length).toBe(3);
    expect(seen.map((sight) => sight.unit)).toEqual(['first', 'second-a', 'second-b']);
    expect(seen[1]!.transaction).toBe(seen[2]!.transaction);
    expect(seen[1]!.transaction).not.toBe(seen[0]!.transaction);
    await Promise.all([first.drain(), second.drain()]);
    const stored = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM ${sql.id(target.database.schema, 'trunk_calls')}`.execute(
      target.database.db,
    );
    expect(stored.rows[0]!.n).toBe(3);
  });

  it('counts the records it quarantines: recordsRejected equals the rejects written, with the rows', async () => {
    const base = await loaderTarget();
    // Quarantined records name their run.
    const runId = await insertRun(base.database.db, {
      accountId: 'MA_TEST',
      stream: 'trunk_calls',
      command: 'test',
      pid: process.pid,
      host: 'test',
    });
    const target = { ...base, runId };
    const loader = new BatchLoader(target, TRUNK_CALLS, { lanes: 2, batchSize: 3 });
    const reject = (key: string) => ({
      accountId: 'MA_TEST',
      stream: 'trunk_calls' as const,
      reason: `end_time is not a time: ${key}`,
      recordKey: key,
      bytes: new TextEncoder().encode(`{"call_uuid":"${key}"}`),
    });
    loader.buffer([call('a'), call('b')], [reject('r1')]);
    await loader.room();
    loader.buffer([call('c'), call('d'), call('e')], [reject('r2'), reject('r3')]);
    await loader.room();
    loader.queueCommit(() => Promise.resolve());
    await loader.drain();
    const stored = await target.test.database.db
      .selectFrom('rejected_records')
      .select('record_key')
      .orderBy('record_key')
      .execute();
    expect(stored.map((row) => row.record_key)).toEqual(['r1', 'r2', 'r3']);
    expect(target.stats).toMatchObject({ recordsUpserted: 5, recordsRejected: 3 });
  });

  it('with one lane holding the rows past its bound and the other idle, room waits for a batch to be written', async () => {
    // In a process of its own, bounded in time and heap: a room that returned at once for the idle
    // lane, again and again, would never let the event loop write the batch it waits for.
    const scenario = fileURLToPath(new URL('../support/loader-room-scenario.ts', import.meta.url));
    const outcome = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--max-old-space-size=256', '--import', 'tsx', scenario],
        { timeout: 60_000 },
        (error, stdout, stderr) =>
          error === null
            ? resolve(stdout)
            : reject(new Error(`the loader's room never returned: ${stderr || error.message}`)),
      );
    });
    const seen = JSON.parse(outcome) as Record<string, number>;
    expect(seen.buffered).toBe(50);
    // It waited for the gate to let lane 1's batch go, and returned once that batch was written.
    expect(seen.waitedMs).toBeGreaterThanOrEqual(250);
    expect(seen.upsertedWhenRoom).toBe(50);
    expect(seen.upserted).toBe(50);
  });

  it('runs side by side load on one lane each; one run alone on two, or on the one connection of the gate', () => {
    expect(loadLanesFor(1, 1)).toBe(1);
    expect(loadLanesFor(1, 2)).toBe(2);
    expect(loadLanesFor(1, 4)).toBe(2);
    expect(loadLanesFor(1, 8)).toBe(2);
    expect(loadLanesFor(2, 2)).toBe(1);
    expect(loadLanesFor(32, 2)).toBe(1);
  });
});

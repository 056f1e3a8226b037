/**
 * Run as a process of its own (`node --import tsx`) by the batch-loader test: a loader of two lanes
 * whose rows all went to lane 1, held behind the load gate past the loader's bound, while lane 0
 * has nothing queued. `room` must wait for lane 1's batch to be written (the gate lets it go after
 * RELEASE_MS), not return at once again and again: a loop of that kind never lets the event loop
 * run, so the gate is never released and the process only grows. Prints what it saw as JSON.
 */
import { rowKey } from '../../src/db/data-loader.js';
import { databaseFromPGlite, openPGlite } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { TRUNK_CALLS } from '../../src/db/table-specs.js';
import { BatchLoader, keyHash } from '../../src/load/batch-loader.js';
import { LoadGate } from '../../src/load/load-gate.js';
import { epochMicrosFromMillis } from '../../src/util/micros.js';
import { trunkCallRow } from './load-rows.js';

const RELEASE_MS = 300;
const BATCH_SIZE = 10;
const LANES = 2;

const database = databaseFromPGlite(await openPGlite(), 'loader_room');
await migrateToLatest(database);
const stats = {
  recordsUpserted: 0,
  recordsChanged: 0,
  recordsRejected: 0,
  loadWaitMs: 0,
  directConflicts: 0,
};
const gate = new LoadGate(1, 1_000_000);
const loader = new BatchLoader(
  { database, runId: 1, now: () => epochMicrosFromMillis(Date.now()), stats, loadGate: gate },
  TRUNK_CALLS,
  { lanes: LANES, batchSize: BATCH_SIZE },
);

// The gate's one connection is taken until RELEASE_MS: every batch of the loader waits behind it.
let release = (): void => undefined;
const held = gate.write(() => new Promise<void>((resolve) => (release = resolve)));
setTimeout(() => release(), RELEASE_MS);

// More rows than the loader's bound (two batches a lane), every one of them on lane 1.
const rows = [];
for (let index = 0; rows.length < BATCH_SIZE * 2 * LANES + BATCH_SIZE; index++) {
  const row = trunkCallRow(`room-${index}`);
  if (keyHash(rowKey(row, TRUNK_CALLS.key)) % LANES === 1) rows.push(row);
}
loader.buffer(rows, []);

const started = performance.now();
await loader.room();
const waitedMs = performance.now() - started;
const upsertedWhenRoom = stats.recordsUpserted;
await loader.drain();
await held;
await database.close();
process.stdout.write(
  JSON.stringify({
    buffered: rows.length,
    waitedMs,
    upsertedWhenRoom,
    upserted: stats.recordsUpserted,
  }),
);
